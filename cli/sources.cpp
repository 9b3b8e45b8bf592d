// cli/sources.cpp - source expansion.
#include "sources.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <istream>
#include <regex>
#include <set>
#include <system_error>

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

constexpr std::size_t kMaxListBytes = 64 << 20;  // a list file of a million paths is well below

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_url(const std::string& s) {
  const std::string l = lower(s);
  for (const char* scheme : kStreamSchemes)
    if (starts_with(l, scheme)) return true;
  return false;
}

bool is_http(const std::string& s) {
  const std::string l = lower(s);
  return starts_with(l, "http://") || starts_with(l, "https://");
}

bool is_all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 4 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool has_glob_characters(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

std::string supported_types_hint() {
  return "supported: images (jpg, jpeg, png, bmp, tif, tiff, webp, ...) and videos (mp4, avi, mkv, mov, ...)";
}

Input make(InputKind kind, const std::string& name) {
  Input in;
  in.kind = kind;
  in.name = name;
  return in;
}

Input invalid(const std::string& name, const std::string& error) {
  Input in = make(InputKind::Invalid, name);
  in.error = error;
  return in;
}

// An existing regular file: an image or a video by its extension.
Input classify_file(const std::string& path) {
  const std::string ext = extension_of(path);
  if (is_image_extension(ext)) return make(InputKind::Image, path);
  if (is_video_extension(ext)) return make(InputKind::Video, path);
  return invalid(path, "unsupported file type '" + (ext.empty() ? std::string("(none)") : "." + ext) + "' (" +
                           supported_types_hint() + ")");
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

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// One source that is not a list (lists are read by expand_sources). `list_folder` is the folder of
// the list it came from ("" on the command line): a relative path missing in the current folder is
// looked up there, as Ultralytics does.
void expand_one(const std::string& raw, const std::string& list_folder, std::vector<Input>* out) {
  static const std::regex video_device("/dev/video([0-9]{1,4})");
  std::smatch m;
  std::string source = raw;
  if (starts_with(lower(source), "file://")) {
    source = percent_decode(source.substr(7));
    if (starts_with(source, "localhost/")) source = source.substr(9);
    if (source.empty() || source[0] != '/') {
      out->push_back(invalid(raw, "a file:// URL needs an absolute path (file:///path/to/image.jpg)"));
      return;
    }
  }
  std::error_code ec;
  if (is_url(source)) {
    Input in = make(InputKind::Stream, source);
    if (is_http(source) && is_image_extension(extension_of(url_path(source)))) {
      in.kind = InputKind::Image;
      in.remote = true;
    }
    out->push_back(in);
    return;
  }
  if (std::regex_match(source, m, video_device)) {
    Input in = make(InputKind::Camera, source);
    in.camera = std::stoi(m[1]);
    out->push_back(in);
    return;
  }
  bool exists = fs::exists(source, ec);
  if (!exists && !list_folder.empty() && fs::path(source).is_relative() &&
      fs::exists(fs::path(list_folder) / source, ec)) {
    source = (fs::path(list_folder) / source).string();
    exists = true;
  }
  if (!exists && is_all_digits(source)) {
    Input in = make(InputKind::Camera, source);
    in.camera = std::stoi(source);
    out->push_back(in);
  } else if (exists && fs::is_directory(source, ec)) {
    expand_folder(source, out);
  } else if (exists && fs::is_regular_file(source, ec)) {
    out->push_back(classify_file(source));
  } else if (exists) {
    out->push_back(invalid(source, "not a regular file or folder"));
  } else if (has_glob_characters(source)) {
    expand_glob(source, out);
  } else {
    out->push_back(invalid(source, "no such file or directory"));
  }
}

// The sources a list holds: one per line; blank lines and lines starting with '#' are skipped.
void expand_list(std::istream& in, const std::string& name, const std::string& folder, std::vector<Input>* out) {
  std::string line;
  std::size_t bytes = 0, count = 0;
  while (std::getline(in, line)) {
    bytes += line.size() + 1;
    if (bytes > kMaxListBytes) {
      out->push_back(invalid(name, "list is larger than 64 MiB; the rest is ignored"));
      return;
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    ++count;
    if (extension_of(line) == "txt" && !is_url(line)) {
      out->push_back(invalid(line, "a list file inside a list (" + name + ") is not read: lists do not nest"));
      continue;
    }
    expand_one(line, folder, out);
  }
  if (count == 0) out->push_back(invalid(name, "the list holds no sources"));
}

}  // namespace

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty() && ext[0] == '.') ext.erase(0, 1);
  return lower(ext);
}

bool is_image_extension(const std::string& ext) { return kImageExtensions.count(ext) > 0; }
bool is_video_extension(const std::string& ext) { return kVideoExtensions.count(ext) > 0; }

std::string url_path(const std::string& url) {
  const std::size_t scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  const std::size_t slash = rest.find('/');
  return slash == std::string::npos ? "/" : percent_decode(rest.substr(slash));
}

Sources expand_sources(const std::vector<std::string>& sources, std::istream& stdin_list) {
  Sources result;
  bool stdin_read = false;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (source == "-") {
      if (stdin_read) {
        result.inputs.push_back(invalid("-", "the list on stdin was read already"));
        continue;
      }
      stdin_read = true;
      expand_list(stdin_list, "the list on stdin", "", &result.inputs);
    } else if (extension_of(source) == "txt" && !is_url(source) && fs::is_regular_file(source, ec)) {
      std::ifstream list(source);
      if (!list) {
        result.inputs.push_back(invalid(source, "cannot open the list file"));
        continue;
      }
      result.list_files.push_back(source);
      expand_list(list, source, fs::path(source).parent_path().string(), &result.inputs);
    } else {
      expand_one(source, "", &result.inputs);
    }
  }
  return result;
}

std::string stem_of(const Input& input) {
  std::string stem;
  if (input.kind == InputKind::Camera) {
    stem = "camera" + std::to_string(input.camera);
  } else if (input.kind == InputKind::Stream || input.remote) {
    std::string path = url_path(input.name);
    while (!path.empty() && path.back() == '/') path.pop_back();
    stem = fs::path(path.substr(path.find_last_of('/') + 1)).stem().string();
  } else {
    stem = fs::path(input.name).stem().string();
  }
  for (char& c : stem)
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  return stem.empty() ? "stream" : stem;
}

std::string save_extension(const Input& input) {
  const std::string ext = extension_of(input.remote ? url_path(input.name) : input.name);
  for (const char* writable : {"jpg", "jpeg", "png", "bmp", "tif", "tiff", "webp", "jp2"})
    if (ext == writable) return ext;
  return "jpg";
}

}  // namespace yolo12_cli
