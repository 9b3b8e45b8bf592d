// cli/images.cpp - still images: read and detect in batches on the detectors' worker threads (batch k
// on detector k mod N), report and save on this thread, in input order.
#include <algorithm>
#include <chrono>
#include <utility>

#include <opencv2/imgcodecs.hpp>

#include "run.hpp"
#include "spread.hpp"

namespace yolo12_cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// One image of a batch: decoded, or the reason it could not be.
struct LoadedImage {
  const Input* input = nullptr;
  std::size_t number = 0;  // 1-based among all inputs
  ReadImage read;
  double decode_ms = 0;
  yolo12::Result result;
  std::string error;  // read.error, or the detector's
};

// A batch read and detected by a worker, and the lines that gave, printed when the batch is reported
// (so that they come in input order as well).
struct Batch {
  enum class Level { Debug, Warning, Verbose };
  std::vector<LoadedImage> images;
  std::vector<std::pair<Level, std::string>> log;
};

// Runs the decoded images of a batch through the detector. A batch that fails is run again image
// by image so that one bad image does not cost the others; an image that still fails gets its error.
void detect_batch(yolo12::Detector& detector, Batch& batch) {
  std::vector<LoadedImage*> decoded;
  for (LoadedImage& im : batch.images)
    if (im.error.empty()) decoded.push_back(&im);
  if (decoded.empty()) return;
  if (decoded.size() > 1) {
    std::vector<yolo12::ImageView> views;
    for (LoadedImage* im : decoded) views.push_back(view_of(im->read.pixels));
    try {
      std::vector<yolo12::Result> results = detector.detect(views);
      for (std::size_t i = 0; i < decoded.size() && i < results.size(); ++i) decoded[i]->result = std::move(results[i]);
      return;
    } catch (const yolo12::Error& e) {
      batch.log.emplace_back(Batch::Level::Verbose, "batch of " + std::to_string(decoded.size()) + " failed (" +
                                                        e.what() + "); running its images one by one");
    }
  }
  for (LoadedImage* im : decoded) {
    try {
      im->result = detector.detect(view_of(im->read.pixels));
    } catch (const yolo12::Error& e) {
      im->error = e.what();
    }
  }
}

// Reads inputs[start, end) (those that fail are reported in their turn) and detects the others.
Batch read_and_detect(const RunContext& ctx, yolo12::Detector& detector, const std::vector<Input>& inputs,
                      std::size_t start, std::size_t end) {
  Batch batch;
  batch.images.resize(end - start);
  for (std::size_t i = start; i < end; ++i) {
    LoadedImage& im = batch.images[i - start];
    im.input = &inputs[i];
    im.number = i + 1;
    const Clock::time_point t0 = Clock::now();
    im.read = read_image(inputs[i], ctx.limits, stop_requested);
    im.decode_ms = ms_since(t0);
    for (const std::string& line : im.read.debug) batch.log.emplace_back(Batch::Level::Debug, inputs[i].name + ": " + line);
    for (const std::string& line : im.read.warnings)
      batch.log.emplace_back(Batch::Level::Warning, inputs[i].name + ": " + line);
    im.error = im.read.error;
  }
  detect_batch(detector, batch);
  return batch;
}

// JSON, summary line, annotated copy, label file and crops for one detected image.
void report_image(RunContext& ctx, LoadedImage& im, std::size_t total, yolo12::ByteTracker* tracker) {
  const auto& names = ctx.info.class_names;
  const yolo12::Result& r = im.result;
  const std::vector<Object> objects = ctx.objects(r, tracker);
  ctx.count(r);
  ctx.write_json(result_json(im.input->name, -1, r, objects, names, im.decode_ms, im.read.warnings));
  ctx.console.summary("image " + std::to_string(im.number) + "/" + std::to_string(total) + " " + im.input->name +
                      ": " + std::to_string(r.input_height) + "x" + std::to_string(r.input_width) + " " +
                      count_summary(objects, names) + ", " + format_ms(r.times.inference_ms) + "ms");
  if (!ctx.options.saves()) return;

  const std::string base = ctx.claim_image(stem_of(*im.input));
  ctx.save_labels_and_crops(im.read.pixels, r, objects, base);  // crops from the unannotated image
  if (ctx.options.save) {
    const std::string ext = save_extension(*im.input);
    const std::string path = ctx.run_dir + "/" + base + "." + ext;
    draw_detections(im.read.pixels, objects, names, ctx.draw_style());
    std::vector<unsigned char> encoded;
    bool ok = false;
    try {
      ok = cv::imencode("." + ext, im.read.pixels, encoded);
    } catch (const cv::Exception&) {
      ok = false;
    }
    if (!ok)
      ctx.fail_output(path, "cannot encode the annotated image as ." + ext);
    else
      ctx.save_file(path, std::string(encoded.begin(), encoded.end()));
  }
}

// The lines, failures and results of one batch, in input order.
void report_batch(RunContext& ctx, Batch& batch, std::size_t total, yolo12::ByteTracker* tracker) {
  for (const auto& line : batch.log) {
    if (line.first == Batch::Level::Debug) ctx.console.debug(line.second);
    else if (line.first == Batch::Level::Warning) ctx.console.warning(line.second);
    else ctx.console.verbose(line.second);
  }
  for (LoadedImage& im : batch.images) {
    if (!im.error.empty())
      ctx.fail_input(im.input->name, im.error);
    else
      report_image(ctx, im, total, tracker);
  }
}

}  // namespace

void run_images(RunContext& ctx, const std::vector<yolo12::Detector*>& detectors, const std::vector<Input>& inputs,
                std::size_t first, std::size_t last) {
  const std::size_t batch_size = static_cast<std::size_t>(std::max(1, ctx.options.batch));
  const std::size_t batches = (last - first + batch_size - 1) / batch_size;
  const auto batch_range = [&](std::size_t k) {
    const std::size_t start = first + k * batch_size;
    return std::make_pair(start, std::min(last, start + batch_size));
  };
  // With --track, consecutive images are one sequence (as Ultralytics tracks a folder).
  const std::unique_ptr<yolo12::ByteTracker> tracker = ctx.make_tracker();
  run_in_order<Batch>(
      detectors.size(), batches,
      [&](std::size_t k, std::size_t worker) {
        const auto range = batch_range(k);
        return read_and_detect(ctx, *detectors[worker], inputs, range.first, range.second);
      },
      [&](std::size_t, Batch& batch) { report_batch(ctx, batch, inputs.size(), tracker.get()); }, stop_requested);
}

}  // namespace yolo12_cli
