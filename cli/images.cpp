// cli/images.cpp - still images: read, detect in batches, report and save, in input order.
#include <chrono>

#include <opencv2/imgcodecs.hpp>

#include "run.hpp"

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

// Runs the decoded images of a batch through the detector. A batch that fails is run again image
// by image so that one bad image does not cost the others; an image that still fails gets its error.
void detect_batch(RunContext& ctx, std::vector<LoadedImage*>& batch) {
  if (batch.empty()) return;
  if (batch.size() > 1) {
    std::vector<yolo12::ImageView> views;
    for (LoadedImage* im : batch) views.push_back(view_of(im->read.pixels));
    try {
      std::vector<yolo12::Result> results = ctx.detector.detect(views);
      for (std::size_t i = 0; i < batch.size() && i < results.size(); ++i) batch[i]->result = std::move(results[i]);
      return;
    } catch (const yolo12::Error& e) {
      ctx.console.verbose("batch of " + std::to_string(batch.size()) + " failed (" + e.what() +
                          "); running its images one by one");
    }
  }
  for (LoadedImage* im : batch) {
    try {
      im->result = ctx.detector.detect(view_of(im->read.pixels));
    } catch (const yolo12::Error& e) {
      im->error = e.what();
    }
  }
}

// JSON, summary line, annotated copy, label file and crops for one detected image.
void report_image(RunContext& ctx, LoadedImage& im, std::size_t total, yolo12::ByteTracker* tracker) {
  const auto& names = ctx.detector.info().class_names;
  const yolo12::Result& r = im.result;
  const std::vector<Object> objects = ctx.objects(r, tracker);
  ctx.count(r);
  ctx.write_json(result_json(im.input->name, -1, r, objects, names, im.decode_ms, im.read.warnings));
  ctx.console.summary("image " + std::to_string(im.number) + "/" + std::to_string(total) + " " + im.input->name +
                      ": " + std::to_string(r.input_height) + "x" + std::to_string(r.input_width) + " " +
                      count_summary(objects, names) + ", " + format_ms(r.times.inference_ms) + "ms");
  if (!ctx.options.saves()) return;

  const std::string base = ctx.names.claim_image(stem_of(*im.input));
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

}  // namespace

void run_images(RunContext& ctx, const std::vector<Input>& inputs, std::size_t first, std::size_t last) {
  const std::size_t batch_size = static_cast<std::size_t>(std::max(1, ctx.options.batch));
  // With --track, consecutive images are one sequence (as Ultralytics tracks a folder).
  const std::unique_ptr<yolo12::ByteTracker> tracker = ctx.make_tracker();
  for (std::size_t start = first; start < last && !stop_requested(); start += batch_size) {
    const std::size_t end = std::min(last, start + batch_size);

    // Read every image of the batch; those that fail are reported in their turn below.
    std::vector<LoadedImage> loaded(end - start);
    std::vector<LoadedImage*> decoded;
    for (std::size_t i = start; i < end; ++i) {
      LoadedImage& im = loaded[i - start];
      im.input = &inputs[i];
      im.number = i + 1;
      const Clock::time_point t0 = Clock::now();
      im.read = read_image(inputs[i], ctx.limits, stop_requested);
      im.decode_ms = ms_since(t0);
      for (const std::string& line : im.read.debug) ctx.console.debug(inputs[i].name + ": " + line);
      for (const std::string& line : im.read.warnings) ctx.console.warning(inputs[i].name + ": " + line);
      im.error = im.read.error;
      if (im.error.empty()) decoded.push_back(&im);
    }
    detect_batch(ctx, decoded);

    for (LoadedImage& im : loaded) {
      if (!im.error.empty())
        ctx.fail_input(im.input->name, im.error);
      else
        report_image(ctx, im, inputs.size(), tracker.get());
    }
  }
}

}  // namespace yolo12_cli
