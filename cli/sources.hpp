// cli/sources.hpp - turning the command line's sources into a list of inputs, and reading
// image files with checks that catch what OpenCV lets through (a truncated JPEG decodes "fine").
//
// A source is an image or video file, a folder (its images and videos, sorted by name, not
// recursive), a glob pattern ('images/*.jpg', expanded here when the shell did not), a camera index
// ("0") or a stream URL (rtsp://, rtmp://, http(s)://, ...). A source that cannot be used becomes an
// input of kind Invalid carrying its message, so it is reported in its place and costs nothing else.
#pragma once

#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace yolo12_cli {

enum class InputKind { Image, Video, Camera, Stream, Invalid };

struct Input {
  InputKind kind = InputKind::Invalid;
  std::string name;   // the path, URL or camera index, as the user will see it
  int camera = -1;    // the camera index (kind Camera)
  std::string error;  // why it cannot be used (kind Invalid)
};

// Expands every source in order. Never throws for a bad source: it becomes an Invalid input.
std::vector<Input> expand_sources(const std::vector<std::string>& sources);

// Lower-case extension without the dot ("jpg"), or "" when there is none.
std::string extension_of(const std::string& path);
bool is_image_extension(const std::string& ext);
bool is_video_extension(const std::string& ext);

// The file name without folder and extension ("images/bus.jpg" -> "bus"); for a URL, its last path
// part ("rtsp://host/live/cam1" -> "cam1"); for a camera, "camera0". Only safe file-name characters.
std::string stem_of(const Input& input);

// Reads and decodes an image file into 8-bit BGR. On failure returns an empty Mat and sets *error
// to a one-line reason ("no such file", "cannot decode image (truncated or not an image)", ...).
cv::Mat read_image(const std::string& path, std::string* error);

}  // namespace yolo12_cli
