// cli/sources.cpp - source expansion and checked image reading.
#include "sources.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

#include <opencv2/imgcodecs.hpp>

namespace fs = std::filesystem;

namespace yolo12_cli {
namespace {

// The file types Ultralytics predict accepts (by extension), so that a folder gives the same files.
const std::set<std::string> kImageExtensions = {"avif", "bmp", "dng",  "heic", "heif", "jp2", "jpeg",
                                                "jpg",  "mpo", "png",  "tif",  "tiff", "webp"};
const std::set<std::string> kVideoExtensions = {"asf", "avi", "gif", "m4v", "mkv", "mov",
                                                "mp4", "mpeg", "mpg", "ts", "wmv", "webm"};

// URL schemes that OpenCV's FFmpeg backend opens as streams.
const char* const kStreamSchemes[] = {"rtsp://", "rtsps://", "rtmp://", "rtmps://", "http://",
                                      "https://", "udp://",  "tcp://",  "srt://"};

bool is_url(const std::string& s) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* scheme : kStreamSchemes)
    if (lower.rfind(scheme, 0) == 0) return true;
  return false;
}

bool is_all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 4 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool has_glob_characters(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::string supported_types_hint() {
  return "supported: images (jpg, jpeg, png, bmp, tif, tiff, webp, ...) and videos (mp4, avi, mkv, mov, ...)";
}

Input invalid(const std::string& name, const std::string& error) {
  Input in;
  in.kind = InputKind::Invalid;
  in.name = name;
  in.error = error;
  return in;
}

// An existing regular file: an image or a video by its extension.
Input classify_file(const std::string& path) {
  const std::string ext = extension_of(path);
  Input in;
  in.name = path;
  if (is_image_extension(ext)) {
    in.kind = InputKind::Image;
  } else if (is_video_extension(ext)) {
    in.kind = InputKind::Video;
  } else {
    return invalid(path, "unsupported file type '" + (ext.empty() ? std::string("(none)") : "." + ext) +
                             "' (" + supported_types_hint() + ")");
  }
  return in;
}

// Paths matching a list, filtered to images and videos, sorted by name.
void add_media_files(std::vector<std::string> paths, std::vector<Input>* out) {
  std::sort(paths.begin(), paths.end());
  for (const std::string& p : paths) {
    const std::string ext = extension_of(p);
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    if (is_image_extension(ext) || is_video_extension(ext)) out->push_back(classify_file(p));
  }
}

void expand_folder(const std::string& folder, std::vector<Input>* out) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
    paths.push_back(it->path().string());
  if (ec) {
    out->push_back(invalid(folder, "cannot list folder: " + ec.message()));
    return;
  }
  const std::size_t before = out->size();
  add_media_files(std::move(paths), out);
  if (out->size() == before) out->push_back(invalid(folder, "no images or videos in folder (" + supported_types_hint() + ")"));
}

void expand_glob(const std::string& pattern, std::vector<Input>* out) {
  glob_t matches{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> paths;
  if (rc == 0)
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  globfree(&matches);
  const std::size_t before = out->size();
  add_media_files(std::move(paths), out);
  if (out->size() == before) out->push_back(invalid(pattern, "no images or videos match this pattern"));
}

// JPEG files end with the EOI marker FF D9 after the last start-of-scan (FF DA) segment. Inside
// entropy-coded data a 0xFF byte is always followed by 0x00 or a restart marker, so neither marker
// can appear there by accident. A file without EOI after its last scan was cut short (OpenCV would
// decode its first part with only a warning and grey out the rest).
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

}  // namespace

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty() && ext[0] == '.') ext.erase(0, 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_image_extension(const std::string& ext) { return kImageExtensions.count(ext) > 0; }
bool is_video_extension(const std::string& ext) { return kVideoExtensions.count(ext) > 0; }

std::vector<Input> expand_sources(const std::vector<std::string>& sources) {
  std::vector<Input> inputs;
  for (const std::string& source : sources) {
    std::error_code ec;
    const bool exists = !is_url(source) && fs::exists(source, ec);
    if (is_url(source)) {
      Input in;
      in.kind = InputKind::Stream;
      in.name = source;
      inputs.push_back(in);
    } else if (!exists && is_all_digits(source)) {
      Input in;
      in.kind = InputKind::Camera;
      in.name = source;
      in.camera = std::stoi(source);
      inputs.push_back(in);
    } else if (exists && fs::is_directory(source, ec)) {
      expand_folder(source, &inputs);
    } else if (exists && fs::is_regular_file(source, ec)) {
      inputs.push_back(classify_file(source));
    } else if (exists) {
      inputs.push_back(invalid(source, "not a regular file or folder"));
    } else if (has_glob_characters(source)) {
      expand_glob(source, &inputs);
    } else {
      inputs.push_back(invalid(source, "no such file or directory"));
    }
  }
  return inputs;
}

std::string stem_of(const Input& input) {
  std::string stem;
  if (input.kind == InputKind::Camera) {
    stem = "camera" + std::to_string(input.camera);
  } else if (input.kind == InputKind::Stream) {
    std::string rest = input.name.substr(input.name.find("://") + 3);
    rest = rest.substr(0, rest.find_first_of("?#"));
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    const std::size_t slash = rest.find_last_of('/');
    stem = fs::path(slash == std::string::npos ? rest : rest.substr(slash + 1)).stem().string();
  } else {
    stem = fs::path(input.name).stem().string();
  }
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return stem.empty() ? "stream" : stem;
}

cv::Mat read_image(const std::string& path, std::string* error) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    *error = "no such file or directory";
    return {};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open file (permission denied?)";
    return {};
  }
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "cannot read file";
    return {};
  }
  if (bytes.empty()) {
    *error = "cannot decode image (empty file)";
    return {};
  }
  const bool jpeg = bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
  const bool png = bytes.size() >= 8 && bytes[0] == 0x89 && bytes[1] == 'P' && bytes[2] == 'N' && bytes[3] == 'G';
  if (jpeg && !jpeg_is_complete(bytes)) {
    *error = "cannot decode image (truncated JPEG: no end-of-image marker)";
    return {};
  }
  if (png && !png_is_complete(bytes)) {
    *error = "cannot decode image (truncated PNG: no IEND chunk)";
    return {};
  }
  cv::Mat image;
  try {
    // IMREAD_COLOR: 8-bit BGR whatever the file holds (grey, alpha, 16-bit), EXIF orientation
    // applied, as cv2.imread in Ultralytics.
    image = cv::imdecode(bytes, cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    image.release();
  }
  if (image.empty() || image.cols <= 0 || image.rows <= 0) {
    *error = "cannot decode image (truncated or not an image)";
    return {};
  }
  return image;
}

}  // namespace yolo12_cli
