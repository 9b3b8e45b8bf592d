// cli/image_header.hpp - an image's width and height from its header, before anything is decoded.
//
// cv::imdecode allocates the whole image before it reads a pixel, so a 2.6 MB PNG that claims
// 30000x30000 pixels costs 2.7 GB. yolo12-infer reads the size here first and refuses images above
// --max-pixels (docs/cli.md). Formats: JPEG (SOFn segment), PNG (IHDR), BMP (DIB header), WebP
// (VP8, VP8L, VP8X), TIFF (first IFD). Other formats give format "" and are left to OpenCV's own
// limit (2^30 pixels).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace yolo12_cli {

struct ImageHeader {
  std::string format;  // "jpeg", "png", "bmp", "webp", "tiff"; "" when not recognised
  std::uint64_t width = 0, height = 0;  // 0 when the header is cut short or holds no size
};

// Reads n bytes at offset (fewer at the end of the data).
using ReadAt = std::function<std::vector<unsigned char>(std::uint64_t offset, std::size_t n)>;

// Reads only the few bytes the header needs through read.
ImageHeader read_image_header(const ReadAt& read);

// The same on bytes in memory.
ImageHeader read_image_header(const std::vector<unsigned char>& bytes);

}  // namespace yolo12_cli
