// cli/image_read.hpp - reading an image file (or a downloaded one) into 8-bit BGR pixels, with the
// checks OpenCV does not make (docs/cli.md, "Images"):
//   1. the file size, before anything is read (no multi-gigabyte read of a file named .jpg);
//   2. the size in the header against --max-pixels, before anything is decoded (decompression
//      bombs), and the file size against what an image of that size can need;
//   3. truncation: a JPEG without its end-of-image marker, a PNG without IEND (OpenCV would decode
//      their first part and grey out the rest);
//   4. what the decoder printed: libjpeg's "Corrupt JPEG data" becomes a warning naming the file (the
//      image may be decoded only in part); other libraries' lines become debug lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "sources.hpp"

namespace yolo12_cli {

struct ImageLimits {
  std::uint64_t max_pixels = 178956970;  // width x height; 0 = no limit (Pillow refuses above this too)
  double timeout_s = 10;                 // downloads: longest wait for the next bytes
};

// Pillow's decompression-bomb threshold (2 x Image.MAX_IMAGE_PIXELS), the default --max-pixels.
constexpr std::uint64_t kDefaultMaxPixels = 178956970;

struct ReadImage {
  cv::Mat pixels;                     // empty on failure
  std::string error;                  // one-line reason, when pixels is empty
  std::vector<std::string> warnings;  // the image was decoded, but not cleanly
  std::vector<std::string> debug;     // other lines the decoders printed
};

// Reads input (an image file, or an image URL downloaded first). stop() ends a download early.
ReadImage read_image(const Input& input, const ImageLimits& limits, const std::function<bool()>& stop);

// The same for bytes already in memory (a downloaded image).
ReadImage decode_image(const std::vector<unsigned char>& bytes, const ImageLimits& limits);

}  // namespace yolo12_cli
