// cli/output.hpp - everything yolo12-infer writes: console lines, JSON Lines, YOLO label files,
// annotated images, crops, and checked file writes.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "yolo12/tracker.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12_cli {

// Console output, safe to call from several threads. Summary and info lines go to stdout (or to
// stderr when stdout carries JSON); warnings, errors, debug lines and the progress line always go to
// stderr. The progress line is only drawn when stderr is a terminal, and is redrawn below other lines.
class Console {
 public:
  Console(bool quiet, bool verbose, bool stdout_is_data);
  void summary(const std::string& line);  // one line per image or frame; not with --quiet
  void info(const std::string& line);     // not with --quiet
  void verbose(const std::string& line);  // only with --verbose
  void debug(const std::string& line);    // other libraries' messages: "debug: ...", only with --verbose
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
// interrupted run) always sees whole lines. Path "-" means stdout. Every write is checked: after a
// failure (disk full, closed pipe) error() says what happened and later writes are dropped.
class JsonLines {
 public:
  // Throws yolo12::InputError when the file cannot be created.
  explicit JsonLines(const std::string& path);
  ~JsonLines();
  JsonLines(const JsonLines&) = delete;
  JsonLines& operator=(const JsonLines&) = delete;
  // false when this or an earlier write failed.
  bool write(const nlohmann::ordered_json& object);
  // Closes the file (flushes stdout); false when that failed or an earlier write did.
  bool close();
  std::string error() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::string error_;
  mutable std::mutex mutex_;
};

// One object found in an image or frame: a detection, and its track with --track (id >= 1).
struct Object {
  yolo12::Detection detection;
  int track_id = -1;  // -1: not tracked
};
std::vector<Object> objects_of(const std::vector<yolo12::Detection>& detections);
// The objects of one tracked frame, as Ultralytics' track mode shows them: the tracks the tracker
// returned (the Kalman box clipped to the image, the id, and the score and class of the detection at
// detection_index). A frame where it returned none shows nothing when a detection strong enough to
// start a track (score >= track_high_thresh and new_track_thresh) is waiting to be confirmed, else the
// frame's own detections without ids (Ultralytics 8.4: on_predict_postprocess_end).
std::vector<Object> tracked_objects(const std::vector<yolo12::Detection>& detections,
                                    const std::vector<yolo12::Track>& tracks, const yolo12::TrackerOptions& options,
                                    int image_width, int image_height);

// The class name for an id ("class17" when the model has no name for it).
std::string class_name(const std::vector<std::string>& names, int class_id);

// "4 persons, 1 bus" (classes in id order, as Ultralytics prints them) or "(no detections)".
std::string count_summary(const std::vector<Object>& objects, const std::vector<std::string>& names);

// The JSON object for one image or frame (frame < 0: a still image, no "frame" key). Objects with a
// track carry "track_id"; warnings (a JPEG decoded with errors) go into "warnings".
nlohmann::ordered_json result_json(const std::string& source, long frame, const yolo12::Result& result,
                                   const std::vector<Object>& objects, const std::vector<std::string>& names,
                                   double decode_ms, const std::vector<std::string>& warnings = {});
// {"source": ..., "error": ...} (and "frame" when frame >= 0).
nlohmann::ordered_json error_json(const std::string& source, const std::string& error, long frame = -1);

// The text of a YOLO label file, as Ultralytics writes it: one line per object,
// "class cx cy w h" normalised by the image size, then the confidence (save_conf), then the track
// id (tracked objects). Empty when there are no objects (Ultralytics then writes no file).
std::string label_text(const std::vector<Object>& objects, int image_width, int image_height, bool save_conf);

// How boxes are drawn: line_width 0 = scaled to the image (as Ultralytics); labels "id:3 person 0.87".
struct DrawStyle {
  int line_width = 0;
  bool labels = true;
  bool conf = true;
};

// Draws boxes and labels, one fixed colour per class id. Boxes that are not finite are skipped and
// coordinates are clamped to the image, so no value can overflow an int.
void draw_detections(cv::Mat& image, const std::vector<Object>& objects, const std::vector<std::string>& names,
                     const DrawStyle& style);

// The crop Ultralytics saves for a box (save_one_box: 1.02 times the box plus 10 pixels, clipped to
// the image); an empty Mat when nothing of it is inside the image.
cv::Mat crop_of(const cv::Mat& image, const yolo12::Box& box);

// Writes bytes to path, checking the open, every write and the close. Returns "" or the reason.
std::string write_file(const std::string& path, const std::string& bytes);

// "1.5" style millisecond text with one decimal.
std::string format_ms(double ms);

}  // namespace yolo12_cli
