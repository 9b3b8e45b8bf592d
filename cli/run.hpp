// cli/run.hpp - what the image and video pipelines of yolo12-infer share: the parsed options, the
// model, the outputs and their guards, running totals, and the Ctrl-C flag.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/core.hpp>

#include "image_read.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "sources.hpp"
#include "yolo12/devices.hpp"
#include "yolo12/tracker.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12_cli {

// Exit statuses (docs/cli.md lists them).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;         // an input or an output failed, or the model cannot be used
constexpr int kExitUsage = 2;          // invalid option or missing argument: nothing was done
constexpr int kExitInterrupted = 130;  // stopped by SIGINT/SIGTERM after a clean drain

// The command line, after parsing (defaults as Ultralytics predict).
struct CliOptions {
  std::vector<std::string> sources;
  std::string model;
  std::string device = "auto";
  std::vector<int> imgsz;  // empty: the model's size; one value: square; two: height width
  bool rect = false;
  float conf = 0.25f;  // 0.1 with --track when not given, as Ultralytics
  float iou = 0.7f;
  int max_det = 300;
  std::vector<int> classes;
  bool agnostic_nms = false;
  bool half = false;
  bool tune = false;  // time the conv kernels on this GPU before the first batch (DetectorOptions::tune_kernels)
  std::string tune_cache;  // keep --tune's choices in this file (DetectorOptions::tune_cache; implies --tune)
  int batch = 1;
  int vid_stride = 1;
  int threads = 0;  // CPU backend threads; 0 = all cores
  bool track = false;
  // Outputs: PROJECT/NAME as Ultralytics, or exactly --output.
  std::string project = "runs/detect";
  std::string name;  // "": predict, or track with --track
  bool exist_ok = false;
  std::string output;
  bool save = false;
  bool save_txt = false;
  bool save_conf = false;
  bool save_crop = false;
  int line_width = 0;  // 0: scaled to the image
  bool hide_labels = false;
  bool hide_conf = false;
  std::string json;  // "" none, "-" stdout
  // Limits on what is read.
  long long max_pixels = static_cast<long long>(kDefaultMaxPixels);
  double stream_timeout = 30;  // seconds a live source may go without a frame before it is given up
  int stream_retries = 5;      // reopenings of a lost live source, in total
  bool quiet = false;
  bool verbose = false;
  bool info = false;
  std::string input_tensor;
  std::string dump_raw;

  bool saves() const { return save || save_txt || save_crop; }
};

// Sums over the whole run, for the closing "Speed:" line and the exit status.
struct Totals {
  double preprocess_ms = 0, inference_ms = 0, postprocess_ms = 0;
  long results = 0;        // images and frames that produced a Result
  int failed_inputs = 0;   // inputs (files, videos, streams) with an error
  int failed_outputs = 0;  // output files that could not be written (or would have overwritten an input)
};

// What the pipelines of one run share. Several threads use it at once (up to one video per detector
// of the pool, and the image workers' reports on the main thread): the console and the JSON Lines lock
// themselves, and the totals and the output names are behind this context's mutex, reached only
// through the methods below. Everything else is read-only during the run.
class RunContext {
 public:
  RunContext(const yolo12::ModelInfo& info, const CliOptions& options, Console& console, JsonLines* json,
             const ProtectedFiles& protected_files, std::string run_dir, ImageLimits limits)
      : info(info), options(options), console(console), json(json), protected_files(protected_files),
        run_dir(std::move(run_dir)), limits(limits) {}

  const yolo12::ModelInfo& info;  // the model's (class names)
  const CliOptions& options;
  Console& console;
  JsonLines* const json;  // null without --json
  const ProtectedFiles& protected_files;
  const std::string run_dir;  // where --save, --save-txt and --save-crop write ("" when none is given)
  const ImageLimits limits;

  // Adds a result's stage times to the totals.
  void count(const yolo12::Result& r);
  // Reports a failed input: an error line, a JSON error object, and the failure count.
  void fail_input(const std::string& source, const std::string& error);
  // Writes one JSON line; the first failure is reported and fails the run.
  void write_json(const nlohmann::ordered_json& object);
  // Writes an output file under run_dir, refusing a path that is an input or the model. Failures are
  // reported (error line) and counted; returns false then.
  bool save_file(const std::string& path, const std::string& bytes);
  // Checks that path may be written (not an input or the model); reports and counts it when not.
  bool may_write(const std::string& path);
  void fail_output(const std::string& path, const std::string& why);
  // Unique base names for an image's and a video's outputs (OutputNames).
  std::string claim_image(const std::string& stem);
  std::string claim_video(const std::string& stem);
  // The totals so far.
  Totals totals() const;

  // The objects of a result: its detections, or with a tracker the tracks it confirms.
  std::vector<Object> objects(const yolo12::Result& r, yolo12::ByteTracker* tracker) const;
  // --save-txt and --save-crop for one image or frame saved under base (image: "bus", frame: "clip_12").
  void save_labels_and_crops(const cv::Mat& image, const yolo12::Result& r, const std::vector<Object>& objects,
                             const std::string& base);
  DrawStyle draw_style() const { return DrawStyle{options.line_width, !options.hide_labels, !options.hide_conf}; }
  std::unique_ptr<yolo12::ByteTracker> make_tracker() const;

 private:
  mutable std::mutex mutex_;  // guards what follows
  OutputNames names_;
  Totals totals_;
  bool json_failed_ = false;  // a JSON write failed (reported once)
};

// The image view of an 8-bit BGR cv::Mat.
yolo12::ImageView view_of(const cv::Mat& bgr);

// Ctrl-C: the first SIGINT or SIGTERM asks the pipelines to stop (they drain and close their files);
// a second one ends the process at once with status 130.
void install_stop_handlers();
bool stop_requested();

// Runs inputs[first, last), all images, in batches of options.batch: batch k is read and detected on
// detectors[k % N] by that detector's worker thread, at most 2N batches in flight, and every batch is
// reported (console, JSON, saved files) on this thread in input order, as with one detector.
void run_images(RunContext& ctx, const std::vector<yolo12::Detector*>& detectors, const std::vector<Input>& inputs,
                std::size_t first, std::size_t last);

// Runs one video file, camera or stream on `detector` (number: 1-based position among all inputs, of
// total; base: the name its saved files take, claimed by the caller, "" when nothing is saved). Safe
// to run for several sources at once on different detectors. Returns false when its decoder thread
// could not be stopped (stuck in a read after Ctrl-C) and was left behind: the process must then end
// without waiting for it (main() does).
bool run_video(RunContext& ctx, yolo12::Detector& detector, const Input& input, std::size_t number, std::size_t total,
               const std::string& base);

// Runs all inputs, in order, over the pool's detectors (cli/spread.cpp): invalid inputs are reported
// in their turn, a run of consecutive images goes through run_images (one detector with --track: the
// images are one sequence), each video or stream runs on a free detector, up to one per detector at
// once. Returns false when a decoder thread was left behind (see run_video).
bool run_inputs(RunContext& ctx, yolo12::DetectorPool& pool, const std::vector<Input>& inputs);
// "cpu", "cpu, cpu" or "cuda:0, cuda:1": the pool's devices, in order.
std::string device_names(const yolo12::DetectorPool& pool);

}  // namespace yolo12_cli
