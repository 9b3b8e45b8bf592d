// cli/ffmpeg.hpp - the two things yolo12-infer asks of FFmpeg directly (OpenCV's video backend uses
// the same libraries): its log, and downloading image URLs.
//
// FFmpeg prints its own messages ("moov atom not found", "Connection refused") to stderr. They are
// routed to yolo12-infer's console as debug lines, shown with --verbose only: our own error line
// says what failed. Without FFmpeg at build time (yolo12-infer built against a static OpenCV
// without video support) both are absent: no log to route, and image URLs are refused.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace yolo12_cli {

// Sends every FFmpeg log line to sink (which must be thread-safe: FFmpeg logs from its threads).
// An empty sink drops them. Call with an empty sink before sink's target is destroyed.
void route_ffmpeg_log(std::function<void(const std::string&)> sink);

// Downloads url (http, https) into *bytes. Fails with a one-line *error when the server answers
// with an error, the body is larger than max_bytes, nothing arrives for timeout_s seconds, or
// stop() turns true (checked several times a second).
bool fetch_url(const std::string& url, std::size_t max_bytes, double timeout_s, const std::function<bool()>& stop,
               std::vector<unsigned char>* bytes, std::string* error);

}  // namespace yolo12_cli
