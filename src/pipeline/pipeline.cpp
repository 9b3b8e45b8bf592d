// pipeline/pipeline.cpp - see pipeline.hpp.
#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "core/tune_cache.hpp"
#include "graph/graph.hpp"
#include "model/model_file.hpp"
#include "pipeline/head.hpp"
#include "pre/letterbox.hpp"

namespace yolo12::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int largest_stride(const ModelInfo& info) {
  return info.strides.empty() ? 32 : *std::max_element(info.strides.begin(), info.strides.end());
}

}  // namespace

DetectorOptions resolve_options(DetectorOptions o, const ModelInfo& info) {
  const int max_stride = largest_stride(info);
  if (o.input_height == 0 && o.input_width == 0) {
    o.input_height = info.input_height;
    o.input_width = info.input_width;
  } else if (o.input_height == 0 || o.input_width == 0) {
    // One side given: square input, as `--imgsz N`.
    o.input_height = o.input_width = std::max(o.input_height, o.input_width);
  }
  const auto bad = [](const std::string& what) { throw OptionError("invalid option: " + what); };
  for (int side : {o.input_height, o.input_width})
    if (side <= 0 || side % max_stride != 0 || side > 8192)
      bad("input size " + std::to_string(o.input_height) + "x" + std::to_string(o.input_width) +
          " must be positive multiples of the model's largest stride " + std::to_string(max_stride) +
          " (at most 8192)");
  if (o.max_batch < 1 || o.max_batch > 1024) bad("max_batch " + std::to_string(o.max_batch) + " must be 1..1024");
  if (!(o.conf >= 0.f && o.conf <= 1.f)) bad("conf " + std::to_string(o.conf) + " must be in [0, 1]");
  if (!(o.iou >= 0.f && o.iou <= 1.f)) bad("iou " + std::to_string(o.iou) + " must be in [0, 1]");
  if (o.max_det < 1) bad("max_det " + std::to_string(o.max_det) + " must be at least 1");
  for (int c : o.classes)
    if (c < 0 || c >= info.num_classes)
      bad("class id " + std::to_string(c) + " is outside the model's classes 0.." + std::to_string(info.num_classes - 1));
  if (o.cpu_threads < 0) bad("cpu_threads must be >= 0");
  if (!o.tune_cache.empty()) {
    o.tune_kernels = true;                  // a tune cache is a store of tuning's choices
    TuneCache check(o.tune_cache, "check");  // read now: a file that is not a tune cache fails here
  }
  if (o.device_index < 0) bad("device index must be >= 0");
  return o;
}

ExecutorConfig executor_config(const DetectorOptions& o) {
  ExecutorConfig c;
  c.input_h = o.input_height;
  c.input_w = o.input_width;
  c.max_batch = o.max_batch;
  c.precision = o.precision;
  c.cpu_threads = o.cpu_threads;
  c.tune_kernels = o.tune_kernels;
  c.tune_cache = o.tune_cache;
  c.nms.conf = o.conf;
  c.nms.iou = o.iou;
  c.nms.max_det = o.max_det;
  c.nms.agnostic = o.agnostic_nms;
  c.nms.classes = o.classes;
  return c;
}

Executor& ExecutorCache::get(int input_h, int input_w) {
  const auto key = std::make_pair(input_h, input_w);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->first == key) {
      entries_.splice(entries_.begin(), entries_, it);
      return *entries_.front().second;
    }
  ExecutorConfig cfg = base_;
  cfg.input_h = input_h;
  cfg.input_w = input_w;
  auto ex = backend_->make_executor(cfg);  // may throw: the cache stays as it was
  if (entries_.size() >= kCapacity) entries_.pop_back();
  entries_.emplace_front(key, std::move(ex));
  return *entries_.front().second;
}

Pipeline::Pipeline(std::shared_ptr<const model::ModelFile> model, const DetectorOptions& options,
                   std::unique_ptr<Backend> backend)
    : model_(std::move(model)),
      options_(options),
      max_stride_(largest_stride(model_->info())),
      backend_(std::move(backend)),
      cache_(*backend_, executor_config(options_)) {
  // The configured shape now, so a bad model or size fails when the detector is made.
  host_images_only_ = !cache_.get(options_.input_height, options_.input_width).caps().fused_preprocess;
}

std::unique_ptr<Pipeline> Pipeline::clone() const {
  return std::make_unique<Pipeline>(model_, options_, backend_->clone());
}

std::vector<Result> Pipeline::detect(const std::vector<ImageView>& images) {
  const std::size_t n = images.size();
  std::vector<Result> results(n);
  if (n == 0) return results;
  if (n > static_cast<std::size_t>(options_.max_batch))
    throw InputError("batch of " + std::to_string(n) + " images exceeds max_batch " + std::to_string(options_.max_batch));

  // Every image checked and its geometry computed before any work.
  std::vector<pre::LetterboxParams> geometry(n);
  for (std::size_t i = 0; i < n; ++i) {
    try {
      pre::check_image_view(images[i]);
    } catch (const InputError& e) {
      throw InputError("image " + std::to_string(i) + ": " + e.what());
    }
    if (host_images_only_ && in_cuda_device_memory(images[i].data))
      throw InputError("image " + std::to_string(i) + ": its pixels are in CUDA device memory, which the " +
                       backend_->device_name() + " backend cannot read; use a CUDA detector or copy the image to the host");
    geometry[i] = pre::letterbox_params(images[i].width, images[i].height, options_.input_height,
                                        options_.input_width, options_.rect, max_stride_);
  }

  StageTimes total;
  std::vector<bool> done(n, false);
  for (std::size_t first = 0; first < n; ++first) {
    if (done[first]) continue;
    // The group: every remaining image with this input shape (all of them in fixed mode).
    std::vector<std::size_t> group;
    for (std::size_t i = first; i < n; ++i)
      if (!done[i] && geometry[i].dst_h == geometry[first].dst_h && geometry[i].dst_w == geometry[first].dst_w) {
        group.push_back(i);
        done[i] = true;
      }
    run_group(images, geometry, group, results, total);
  }
  const double per_image = 1.0 / static_cast<double>(n);
  for (Result& r : results) {
    r.times.preprocess_ms = total.preprocess_ms * per_image;
    r.times.inference_ms = total.inference_ms * per_image;
    r.times.postprocess_ms = total.postprocess_ms * per_image;
  }
  return results;
}

void Pipeline::run_group(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                         const std::vector<std::size_t>& group, std::vector<Result>& results, StageTimes& total) {
  const int h = geometry[group[0]].dst_h, w = geometry[group[0]].dst_w;
  Executor& ex = cache_.get(h, w);
  const ExecutorCaps caps = ex.caps();
  const int nb = static_cast<int>(group.size());
  const std::unique_ptr<Head> head = Head::make(ex.graph().head, executor_config(options_).nms);
  const std::size_t in_size = 3 * static_cast<std::size_t>(h) * w;                                   // per image
  const std::size_t raw_size = static_cast<std::size_t>(head->raw_channels()) * head->raw_anchors();  // per image

  std::vector<ImageView> views;
  std::vector<pre::LetterboxParams> geo;
  for (std::size_t i : group) {
    views.push_back(images[i]);
    geo.push_back(geometry[i]);
  }
  ExecutorRun run;
  run.batch = nb;
  StageTimes device;
  run.device_times = &device;

  auto t0 = Clock::now();
  if (caps.fused_preprocess) {
    run.images = views.data();
    run.geometry = geo.data();
  } else {
    input_.resize(in_size * nb);  // (nb, 3, h, w)
    for (int k = 0; k < nb; ++k) pre::letterbox_to_nchw(views[k], geo[k], input_.data() + in_size * k);
    run.input = input_.data();
    total.preprocess_ms += ms_since(t0);
  }

  std::vector<std::vector<Detection>> dets(static_cast<std::size_t>(nb));
  if (caps.fused_nms) {
    run.detections = dets.data();
  } else {
    raw_.resize(raw_size * nb);  // (nb, C, A)
    run.raw = raw_.data();
  }
  t0 = Clock::now();
  ex.run(run);
  const double run_ms = ms_since(t0);
  // Host time of what the executor ran, unless it measured its fused stages on its device.
  if (caps.fused_preprocess || caps.fused_nms) {
    total.preprocess_ms += caps.fused_preprocess ? device.preprocess_ms : 0.0;
    total.inference_ms += device.inference_ms;
    total.postprocess_ms += caps.fused_nms ? device.postprocess_ms : 0.0;
  } else {
    total.inference_ms += run_ms;
  }

  t0 = Clock::now();
  for (int k = 0; k < nb; ++k) {
    const pre::LetterboxParams& p = geo[k];
    std::vector<Detection>& d = dets[static_cast<std::size_t>(k)];
    if (!caps.fused_nms) d = head->postprocess(raw_.data() + raw_size * k);
    head->to_image(d, p);
    Result& r = results[group[static_cast<std::size_t>(k)]];
    r.detections = std::move(d);
    r.image_width = p.src_w;
    r.image_height = p.src_h;
    r.input_width = p.dst_w;
    r.input_height = p.dst_h;
  }
  if (!caps.fused_nms) total.postprocess_ms += ms_since(t0);
}

std::vector<float> Pipeline::forward_raw(const float* nchw, int batch, int height, int width, int* channels,
                                         int* anchors) {
  if (!nchw) throw InputError("forward_raw: null tensor pointer");
  if (batch < 1 || height <= 0 || width <= 0 || height % max_stride_ != 0 || width % max_stride_ != 0 ||
      height > 8192 || width > 8192)
    throw InputError("forward_raw: tensor (" + std::to_string(batch) + ", 3, " + std::to_string(height) + ", " +
                     std::to_string(width) + ") must have batch >= 1 and H, W positive multiples of " +
                     std::to_string(max_stride_) + " (at most 8192)");
  Executor& ex = cache_.get(height, width);
  const int c = ex.graph().head.raw_channels(), a = ex.graph().head.raw_anchors();
  const std::size_t in_size = 3 * static_cast<std::size_t>(height) * width;  // per image
  const std::size_t out_size = static_cast<std::size_t>(c) * a;             // per image
  std::vector<float> out(out_size * static_cast<std::size_t>(batch));
  // In chunks of at most max_batch images (the executor's planned size).
  for (int b0 = 0; b0 < batch; b0 += ex.max_batch()) {
    ExecutorRun run;
    run.batch = std::min(ex.max_batch(), batch - b0);
    run.input = nchw + in_size * b0;
    run.raw = out.data() + out_size * b0;
    ex.run(run);
  }
  if (channels) *channels = c;
  if (anchors) *anchors = a;
  return out;
}

}  // namespace yolo12::pipeline
