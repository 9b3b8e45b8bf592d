// cli/run.hpp - what the image and video pipelines of yolo12-infer share: the parsed
// options, the detector, the outputs, running totals, and the Ctrl-C flag.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "output.hpp"
#include "sources.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12_cli {

// Exit statuses (docs/cli.md lists them).
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;       // an input failed, or the model cannot be used
constexpr int kExitUsage = 2;        // invalid option or missing argument: nothing was done
constexpr int kExitInterrupted = 130;  // stopped by SIGINT/SIGTERM after a clean drain

// The command line, after parsing (defaults as Ultralytics predict).
struct CliOptions {
  std::vector<std::string> sources;
  std::string model;
  std::string device = "auto";
  std::vector<int> imgsz;  // empty: the model's size; one value: square; two: height width
  bool rect = false;
  float conf = 0.25f;
  float iou = 0.7f;
  int max_det = 300;
  std::vector<int> classes;
  bool agnostic_nms = false;
  bool half = false;
  int batch = 1;
  int vid_stride = 1;
  std::string output = "runs/predict";
  bool save = false;
  bool save_txt = false;
  std::string json;  // "" none, "-" stdout
  bool quiet = false;
  bool verbose = false;
  bool info = false;
  std::string input_tensor;
  std::string dump_raw;
};

// Sums over the whole run, for the closing "Speed:" line and the exit status.
struct Totals {
  double preprocess_ms = 0, inference_ms = 0, postprocess_ms = 0;
  long results = 0;       // images and frames that produced a Result
  int failed_inputs = 0;  // inputs (files, videos, streams) with an error
};

struct RunContext {
  yolo12::Detector& detector;
  const CliOptions& options;
  Console& console;
  JsonLines* json;  // null without --json
  OutputNames names;
  Totals totals;

  // Adds a result's stage times to the totals.
  void count(const yolo12::Result& r) {
    totals.preprocess_ms += r.times.preprocess_ms;
    totals.inference_ms += r.times.inference_ms;
    totals.postprocess_ms += r.times.postprocess_ms;
    ++totals.results;
  }
  // Reports a failed input: an error line, a JSON error object, and the failure count.
  void fail_input(const std::string& source, const std::string& error) {
    console.error(source + ": " + error);
    if (json) json->write(error_json(source, error));
    ++totals.failed_inputs;
  }
  std::string labels_dir() const { return options.output + "/labels"; }
};

// Ctrl-C: the first SIGINT or SIGTERM asks the pipelines to stop (they drain and close their files);
// a second one ends the process at once with status 130.
void install_stop_handlers();
bool stop_requested();

// Runs inputs[first, last), all images, in batches of options.batch, in order.
void run_images(RunContext& ctx, const std::vector<Input>& inputs, std::size_t first, std::size_t last);

// Runs one video file, camera or stream (number: 1-based position among all inputs, of total).
void run_video(RunContext& ctx, const Input& input, std::size_t number, std::size_t total);

}  // namespace yolo12_cli
