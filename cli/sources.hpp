// cli/sources.hpp - turning the command line's sources into a list of inputs.
//
// A source is an image or video file, a folder (its images and videos, sorted by name, not
// recursive), a glob pattern ('images/*.jpg', expanded here when the shell did not), a list file
// (.txt, one source per line), "-" (such a list on stdin), a camera index ("0") or device
// (/dev/video0), a file:// URL, an image URL (http(s):// ending in an image suffix: downloaded and
// read as an image), or a stream URL (rtsp://, rtmp://, http(s)://, ...). A source that cannot be
// used becomes an input of kind Invalid carrying its message, so it is reported in its place and
// costs nothing else.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace yolo12_cli {

enum class InputKind { Image, Video, Camera, Stream, Invalid };

struct Input {
  InputKind kind = InputKind::Invalid;
  std::string name;     // the path, URL or camera index, as the user will see it
  bool remote = false;  // an image to download (name is its URL)
  int camera = -1;      // the camera index (kind Camera)
  std::string error;    // why it cannot be used (kind Invalid)
};

struct Sources {
  std::vector<Input> inputs;
  std::vector<std::string> list_files;  // the .txt lists read (inputs too: never written over)
};

// Expands every source in order; "-" reads a list from stdin (once). Never throws for a bad source:
// it becomes an Invalid input.
Sources expand_sources(const std::vector<std::string>& sources, std::istream& stdin_list);

// Lower-case extension without the dot ("jpg"), or "" when there is none.
std::string extension_of(const std::string& path);
bool is_image_extension(const std::string& ext);
bool is_video_extension(const std::string& ext);

// The path part of a URL, percent-decoded, without query and fragment ("http://h/a/b%20c.jpg?x=1"
// -> "/a/b c.jpg").
std::string url_path(const std::string& url);

// The name outputs are saved under: the file name without folder and extension ("images/bus.jpg" ->
// "bus"); for a URL its last path part ("rtsp://host/live/cam1" -> "cam1"); for a camera "camera0".
// Non-ASCII names are kept as they are; only '/', '\' and control characters become '_'.
std::string stem_of(const Input& input);

// The extension an annotated image is saved with: the input's own when OpenCV can write it, else jpg.
std::string save_extension(const Input& input);

}  // namespace yolo12_cli
