// cli/output.hpp - everything yolo12-infer writes: console lines, JSON Lines, YOLO label
// files, annotated images, and the names of the files it saves.
#pragma once

#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "yolo12/yolo12.hpp"

namespace yolo12_cli {

// Console output, safe to call from several threads. Summary and info lines go to stdout (or to
// stderr when stdout carries JSON); warnings, errors and the progress line always go to stderr.
// The progress line is only drawn when stderr is a terminal, and is redrawn below other lines.
class Console {
 public:
  Console(bool quiet, bool verbose, bool stdout_is_data);
  void summary(const std::string& line);  // one line per image or frame; not with --quiet
  void info(const std::string& line);     // not with --quiet
  void verbose(const std::string& line);  // only with --verbose
  void warning(const std::string& line);  // "warning: ..." always
  void error(const std::string& line);    // "error: ..." always
  // Replaces the progress line (terminal only, not with --quiet). end_progress() removes it.
  void progress(const std::string& line);
  void end_progress();
  bool shows_progress() const { return progress_enabled_; }

 private:
  void print(std::FILE* stream, const std::string& line);
  std::mutex mutex_;
  bool quiet_;
  bool verbose_;
  std::FILE* out_;
  bool progress_enabled_;
  std::string progress_;  // the line now on screen ("" when none)
};

// JSON Lines output: one object per line, flushed after every line so that a consumer (or an
// interrupted run) always sees whole lines. Path "-" means stdout.
class JsonLines {
 public:
  // Throws yolo12::InputError when the file cannot be created.
  explicit JsonLines(const std::string& path);
  ~JsonLines();
  JsonLines(const JsonLines&) = delete;
  JsonLines& operator=(const JsonLines&) = delete;
  void write(const nlohmann::ordered_json& object);

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::mutex mutex_;
};

// Unique base names for saved files: "bus", then "bus-2", "bus-3" for other inputs with the same stem
// (bus.jpg and bus.png, or a/clip.mp4 and b/clip.mp4), so that no output overwrites another.
class OutputNames {
 public:
  std::string claim(const std::string& stem);

 private:
  std::set<std::string> used_;
};

// The class name for an id ("class17" when the model has no name for it).
std::string class_name(const std::vector<std::string>& names, int class_id);

// "4 persons, 1 bus" (classes in id order, as Ultralytics prints them) or "(no detections)".
std::string count_summary(const std::vector<yolo12::Detection>& detections,
                          const std::vector<std::string>& names);

// The JSON object for one image or frame (frame < 0: a still image, no "frame" key).
nlohmann::ordered_json result_json(const std::string& source, long frame, const yolo12::Result& result,
                           const std::vector<std::string>& names, double decode_ms);
// {"source": ..., "error": ...} (and "frame" when frame >= 0).
nlohmann::ordered_json error_json(const std::string& source, const std::string& error, long frame = -1);

// Writes YOLO label lines "class cx cy w h conf" (normalised by the image size) to path. Writes no
// file when there are no detections (as Ultralytics). Returns false when the file cannot be written.
bool write_labels(const std::string& path, const yolo12::Result& result);

// Draws boxes with "name score" labels, one fixed colour per class id, line width scaled to the image.
void draw_detections(cv::Mat& image, const std::vector<yolo12::Detection>& detections,
                     const std::vector<std::string>& names);

// "1.5" style millisecond text with one decimal.
std::string format_ms(double ms);

}  // namespace yolo12_cli
