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
  cv::Mat pixels;
  double decode_ms = 0;
  std::string error;
  yolo12::Result result;
};

yolo12::ImageView view_of(const cv::Mat& bgr) {
  yolo12::ImageView view;
  view.data = bgr.data;
  view.width = bgr.cols;
  view.height = bgr.rows;
  view.pitch = bgr.step;
  view.format = yolo12::PixelFormat::BGR8;
  return view;
}

// Runs the decoded images of a batch through the detector. A batch that fails is run again image
// by image so that one bad image does not cost the others; an image that still fails gets its error.
void detect_batch(RunContext& ctx, std::vector<LoadedImage*>& batch) {
  if (batch.empty()) return;
  if (batch.size() > 1) {
    std::vector<yolo12::ImageView> views;
    for (LoadedImage* im : batch) views.push_back(view_of(im->pixels));
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
      im->result = ctx.detector.detect(view_of(im->pixels));
    } catch (const yolo12::Error& e) {
      im->error = e.what();
    }
  }
}

// The extension to save an annotated copy with: the input's own when OpenCV can write it, else jpg.
std::string save_extension(const std::string& path) {
  const std::string ext = extension_of(path);
  for (const char* writable : {"jpg", "jpeg", "png", "bmp", "tif", "tiff", "webp", "jp2"})
    if (ext == writable) return ext;
  return "jpg";
}

// JSON, summary line, annotated copy and label file for one detected image.
void report_image(RunContext& ctx, LoadedImage& im, std::size_t total) {
  const auto& names = ctx.detector.info().class_names;
  const yolo12::Result& r = im.result;
  ctx.count(r);
  if (ctx.json) ctx.json->write(result_json(im.input->name, -1, r, names, im.decode_ms));
  ctx.console.summary("image " + std::to_string(im.number) + "/" + std::to_string(total) + " " + im.input->name +
                      ": " + std::to_string(r.input_height) + "x" + std::to_string(r.input_width) + " " +
                      count_summary(r.detections, names) + ", " + format_ms(r.times.inference_ms) + "ms");
  if (!ctx.options.save && !ctx.options.save_txt) return;

  const std::string base = ctx.names.claim(stem_of(*im.input));
  if (ctx.options.save) {
    const std::string path = ctx.options.output + "/" + base + "." + save_extension(im.input->name);
    draw_detections(im.pixels, r.detections, names);
    bool written = false;
    try {
      written = cv::imwrite(path, im.pixels);
    } catch (const cv::Exception&) {
      written = false;
    }
    if (!written) ctx.console.warning(path + ": cannot write the annotated image");
  }
  if (ctx.options.save_txt && !write_labels(ctx.labels_dir() + "/" + base + ".txt", r))
    ctx.console.warning(ctx.labels_dir() + "/" + base + ".txt: cannot write the label file");
}

}  // namespace

void run_images(RunContext& ctx, const std::vector<Input>& inputs, std::size_t first, std::size_t last) {
  const std::size_t batch_size = static_cast<std::size_t>(std::max(1, ctx.options.batch));
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
      im.pixels = read_image(inputs[i].name, &im.error);
      im.decode_ms = ms_since(t0);
      if (im.error.empty()) decoded.push_back(&im);
    }
    detect_batch(ctx, decoded);

    for (LoadedImage& im : loaded) {
      if (!im.error.empty())
        ctx.fail_input(im.input->name, im.error);
      else
        report_image(ctx, im, inputs.size());
    }
  }
}

}  // namespace yolo12_cli
