// cli/image_read.cpp - see image_read.hpp.
#include "image_read.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "ffmpeg.hpp"
#include "image_header.hpp"
#include "stderr_capture.hpp"

namespace yolo12_cli {
namespace {

// An image of W x H pixels needs at most 8 bytes a pixel (16-bit RGBA, uncompressed) plus
// metadata; a file larger than that is not the image it claims to be.
constexpr std::uint64_t kBytesPerPixelBound = 8;
constexpr std::uint64_t kMetadataBound = 64ull << 20;
// For formats whose header is not read here (jp2, avif, heic, ...): the largest file accepted.
constexpr std::uint64_t kMaxUnknownFormatBytes = 256ull << 20;
constexpr std::uint64_t kMaxDecodableBytes = (1ull << 31) - 1;  // cv::imdecode's buffer is int-sized

std::string mib(std::uint64_t bytes) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << bytes / 1048576.0 << " MiB";
  return s.str();
}

// Checks the header's size against the limits and the file's size; "" when it may be decoded.
std::string check_header(const ImageHeader& h, std::uint64_t file_bytes, const ImageLimits& limits) {
  if (h.format.empty()) {
    if (file_bytes > kMaxUnknownFormatBytes)
      return "file is " + mib(file_bytes) + ", more than the 256 MiB read for an image in a format whose size "
             "is not checked first";
    return "";
  }
  if (h.width == 0 || h.height == 0)
    return "cannot decode image (" + h.format + " header gives no image size: cut short or corrupt)";
  const std::uint64_t pixels = h.width * h.height;  // both below 2^32: no overflow
  if (limits.max_pixels && pixels > limits.max_pixels)
    return "image is " + std::to_string(h.width) + "x" + std::to_string(h.height) + " = " + std::to_string(pixels) +
           " pixels, more than --max-pixels " + std::to_string(limits.max_pixels) +
           " (a decompression bomb?); raise --max-pixels to read it";
  const std::uint64_t bound = pixels * kBytesPerPixelBound + kMetadataBound;
  if (file_bytes > bound)
    return "file is " + mib(file_bytes) + ", more than a " + std::to_string(h.width) + "x" + std::to_string(h.height) +
           " " + h.format + " can need (" + mib(bound) + "): not that image";
  return "";
}

// JPEG files end with the EOI marker FF D9 after the last start-of-scan (FF DA) segment. Inside
// entropy-coded data a 0xFF byte is always followed by 0x00 or a restart marker, so neither marker
// can appear there by accident. A file without EOI after its last scan was cut short.
bool jpeg_is_complete(const std::vector<unsigned char>& bytes) {
  std::size_t last_scan = std::string::npos;
  for (std::size_t i = 0; i + 1 < bytes.size(); ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xDA) last_scan = i;
  if (last_scan == std::string::npos) return false;
  for (std::size_t i = last_scan; i + 1 < bytes.size(); ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xD9) return true;
  return false;
}

// PNG files end with an IEND chunk (type "IEND" followed by its 4-byte CRC).
bool png_is_complete(const std::vector<unsigned char>& bytes) {
  static const unsigned char iend[4] = {'I', 'E', 'N', 'D'};
  const std::size_t tail = std::min<std::size_t>(bytes.size(), 64);
  return std::search(bytes.end() - tail, bytes.end(), iend, iend + 4) != bytes.end();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(line);
  return lines;
}

ReadImage failed(const std::string& error) {
  ReadImage r;
  r.error = error;
  return r;
}

// Decodes bytes whose header was checked.
ReadImage decode_checked(const std::vector<unsigned char>& bytes, const ImageHeader& header) {
  if (header.format == "jpeg" && !jpeg_is_complete(bytes))
    return failed("cannot decode image (truncated JPEG: no end-of-image marker)");
  if (header.format == "png" && !png_is_complete(bytes)) return failed("cannot decode image (truncated PNG: no IEND chunk)");
  ReadImage r;
  const std::string printed = capture_stderr([&] {
    try {
      // IMREAD_COLOR: 8-bit BGR whatever the file holds (grey, alpha, 16-bit), EXIF orientation
      // applied, as cv2.imread in Ultralytics.
      r.pixels = cv::imdecode(bytes, cv::IMREAD_COLOR);
    } catch (const cv::Exception&) {
      r.pixels.release();
    }
  });
  for (const std::string& line : lines_of(printed)) {
    // libjpeg's warnings (JWRN_*: "Corrupt JPEG data: ...", "Premature end of JPEG file") are
    // printed as plain lines; OpenCV's own start with '['.
    if (header.format == "jpeg" && line[0] != '[')
      r.warnings.push_back("JPEG data is corrupt, the image may be decoded only in part (libjpeg: " + line + ")");
    else
      r.debug.push_back(line);
  }
  if (r.pixels.empty() || r.pixels.cols <= 0 || r.pixels.rows <= 0) {
    r.pixels.release();
    r.warnings.clear();
    r.error = "cannot decode image (truncated or not an image)";
  }
  return r;
}

}  // namespace

ReadImage decode_image(const std::vector<unsigned char>& bytes, const ImageLimits& limits) {
  if (bytes.empty()) return failed("cannot decode image (empty file)");
  const ImageHeader header = read_image_header(bytes);
  const std::string refused = check_header(header, bytes.size(), limits);
  if (!refused.empty()) return failed(refused);
  if (bytes.size() > kMaxDecodableBytes) return failed("file is " + mib(bytes.size()) + ", more than 2 GiB");
  return decode_checked(bytes, header);
}

ReadImage read_image(const Input& input, const ImageLimits& limits, const std::function<bool()>& stop) {
  if (input.remote) {
    std::vector<unsigned char> bytes;
    std::string error;
    const std::uint64_t max_bytes = std::min(kMaxDecodableBytes, limits.max_pixels ? limits.max_pixels * kBytesPerPixelBound + kMetadataBound
                                                                                  : kMaxDecodableBytes);
    if (!fetch_url(input.name, static_cast<std::size_t>(max_bytes), limits.timeout_s, stop, &bytes, &error))
      return failed(error);
    return decode_image(bytes, limits);
  }
  struct stat st;
  if (::stat(input.name.c_str(), &st) != 0)
    return failed(errno == ENOENT ? "no such file or directory" : std::string("cannot open file (") + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) return failed("not a regular file");
  const std::uint64_t file_bytes = static_cast<std::uint64_t>(st.st_size);
  if (file_bytes == 0) return failed("cannot decode image (empty file)");
  std::ifstream in(input.name, std::ios::binary);
  if (!in) return failed(std::string("cannot open file (") + std::strerror(errno) + ")");

  // 1-2: the header through small reads, checked before the file is read whole.
  const ImageHeader header = read_image_header([&](std::uint64_t offset, std::size_t n) {
    std::vector<unsigned char> b;
    if (offset >= file_bytes) return b;
    b.resize(static_cast<std::size_t>(std::min<std::uint64_t>(n, file_bytes - offset)));
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size()));
    b.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
    return b;
  });
  // A format whose header is not read here: OpenCV looks at its signature (a few bytes) first.
  if (header.format.empty() && !cv::haveImageReader(input.name))
    return failed("cannot decode image (not an image: no decoder knows its first bytes)");
  const std::string refused = check_header(header, file_bytes, limits);
  if (!refused.empty()) return failed(refused);
  if (file_bytes > kMaxDecodableBytes) return failed("file is " + mib(file_bytes) + ", more than 2 GiB");

  // 3-4: the whole file, then decoding.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(file_bytes));
  in.clear();
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::uint64_t>(in.gcount()) != file_bytes) return failed("cannot read file (it changed while being read?)");
  return decode_checked(bytes, header);
}

}  // namespace yolo12_cli
