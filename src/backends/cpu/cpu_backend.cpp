// cpu/cpu_backend.cpp - the CPU Backend: letterbox each image (pre/), run the CpuExecutor on the
// batch, NMS per image and boxes back to image pixels (post/), as Ultralytics predict does.
//
// Fixed mode: every image is padded to the configured input size, so one executor serves all.
// Rect mode: each image gets its own minimum rectangle (a multiple of the largest stride), so a batch
// is split into groups of equal input shape, in order, each run as one sub-batch (Ultralytics instead
// pads a batch of differently sized images to the full size; per image, ours equals its single-image
// predict). Executors are built on first use per input shape and kept (the few most recent), sharing
// the float weights.
#include <algorithm>
#include <chrono>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "backends/cpu/executor.hpp"
#include "model/model_file.hpp"
#include "post/nms.hpp"
#include "pre/letterbox.hpp"

namespace yolo12 {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const model::ModelFile> model, std::shared_ptr<const cpu::CpuWeights> weights,
             const DetectorOptions& options)
      : model_(std::move(model)), weights_(std::move(weights)), options_(options) {
    // The Detector passes validated options; a direct caller may leave the size at 0 (model default).
    const auto& imgsz = model_->header().at("imgsz");
    if (options_.input_height <= 0) options_.input_height = imgsz.at(0).get<int>();
    if (options_.input_width <= 0) options_.input_width = imgsz.at(1).get<int>();
    if (options_.max_batch < 1) options_.max_batch = 1;
    const auto& strides = model_->header().at("strides");
    for (const auto& s : strides) max_stride_ = std::max(max_stride_, s.get<int>());
    nc_ = model_->header().at("nc").get<int>();
    nms_.conf = options_.conf;
    nms_.iou = options_.iou;
    nms_.max_det = options_.max_det;
    nms_.agnostic = options_.agnostic_nms;
    nms_.classes = options_.classes;
    // Build the executor for the configured size now, so a bad model or size fails at construction.
    executor_for(options_.input_height, options_.input_width);
  }

  std::vector<Result> detect(const std::vector<ImageView>& images) override {
    const std::size_t n = images.size();
    std::vector<Result> results(n);
    if (n == 0) return results;
    if (n > static_cast<std::size_t>(options_.max_batch))
      throw InputError("batch of " + std::to_string(n) + " images exceeds max_batch " +
                       std::to_string(options_.max_batch));

    // Geometry of every image, checked before any work.
    std::vector<pre::LetterboxParams> params(n);
    for (std::size_t i = 0; i < n; ++i) {
      pre::check_image_view(images[i]);
      params[i] = pre::letterbox_params(images[i].width, images[i].height, options_.input_height,
                                        options_.input_width, options_.rect, max_stride_);
    }

    StageTimes total;
    std::vector<bool> done(n, false);
    for (std::size_t first = 0; first < n; ++first) {
      if (done[first]) continue;
      // The group: every remaining image with this input shape (all of them in fixed mode).
      const int h = params[first].dst_h, w = params[first].dst_w;
      std::vector<std::size_t> group;
      for (std::size_t i = first; i < n; ++i)
        if (!done[i] && params[i].dst_h == h && params[i].dst_w == w) group.push_back(i), done[i] = true;
      run_group(images, params, group, results, total);
    }

    const double per_image = 1.0 / static_cast<double>(n);
    for (Result& r : results) {
      r.times.preprocess_ms = total.preprocess_ms * per_image;
      r.times.inference_ms = total.inference_ms * per_image;
      r.times.postprocess_ms = total.postprocess_ms * per_image;
    }
    return results;
  }

  std::vector<float> forward_raw(const float* nchw, int batch, int height, int width, int* channels,
                                 int* anchors) override {
    if (nchw == nullptr) throw InputError("forward_raw: null tensor pointer");
    if (batch < 1) throw InputError("forward_raw: batch must be >= 1");
    cpu::CpuExecutor& ex = executor_for(height, width);
    const std::size_t in_size = 3 * static_cast<std::size_t>(height) * width;  // per image
    const std::size_t out_size = static_cast<std::size_t>(ex.channels()) * ex.anchors();
    std::vector<float> out(out_size * static_cast<std::size_t>(batch));
    // In chunks of at most max_batch images (the executor's planned size).
    for (int b0 = 0; b0 < batch; b0 += options_.max_batch) {
      const int nb = std::min(options_.max_batch, batch - b0);
      ex.forward(nchw + in_size * b0, nb, out.data() + out_size * b0);
    }
    if (channels) *channels = ex.channels();
    if (anchors) *anchors = ex.anchors();
    return out;
  }

  std::unique_ptr<Backend> clone() const override {
    return std::make_unique<CpuBackend>(model_, weights_, options_);
  }

  std::string device_name() const override { return "cpu"; }

 private:
  // Letterbox, network and NMS for the images `group` (indices into images), which share one input
  // shape; adds the stage times to `total`.
  void run_group(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& params,
                 const std::vector<std::size_t>& group, std::vector<Result>& results, StageTimes& total) {
    const int h = params[group[0]].dst_h, w = params[group[0]].dst_w;
    cpu::CpuExecutor& ex = executor_for(h, w);
    const int nb = static_cast<int>(group.size());
    const std::size_t in_size = 3 * static_cast<std::size_t>(h) * w;                 // per image
    const std::size_t out_size = static_cast<std::size_t>(ex.channels()) * ex.anchors();  // per image

    auto t0 = Clock::now();
    input_.resize(in_size * nb);  // (nb, 3, h, w)
    for (int k = 0; k < nb; ++k)
      pre::letterbox_to_nchw(images[group[k]], params[group[k]], input_.data() + in_size * k);
    total.preprocess_ms += ms_since(t0);

    t0 = Clock::now();
    output_.resize(out_size * nb);  // (nb, 4 + nc, A)
    ex.forward(input_.data(), nb, output_.data());
    total.inference_ms += ms_since(t0);

    t0 = Clock::now();
    for (int k = 0; k < nb; ++k) {
      const std::size_t i = group[k];
      const pre::LetterboxParams& p = params[i];
      Result& r = results[i];
      r.detections = post::nms(output_.data() + out_size * k, nc_, ex.anchors(), nms_);
      post::scale_boxes(r.detections, p);
      r.image_width = p.src_w;
      r.image_height = p.src_h;
      r.input_width = p.dst_w;
      r.input_height = p.dst_h;
    }
    total.postprocess_ms += ms_since(t0);
  }

  // The executor for one input size, built on first use; the most recently used few are kept.
  cpu::CpuExecutor& executor_for(int h, int w) {
    for (auto it = executors_.begin(); it != executors_.end(); ++it)
      if (it->first == std::make_pair(h, w)) {
        executors_.splice(executors_.begin(), executors_, it);  // most recent first
        return *executors_.front().second;
      }
    auto ex = std::make_unique<cpu::CpuExecutor>(weights_, model_->header(), h, w, options_.max_batch,
                                                 options_.cpu_threads);
    executors_.emplace_front(std::make_pair(h, w), std::move(ex));
    if (executors_.size() > kMaxExecutors) executors_.pop_back();
    return *executors_.front().second;
  }

  // Rect mode at 640 has up to ~20 shapes per orientation; each executor holds its activations.
  static constexpr std::size_t kMaxExecutors = 4;

  std::shared_ptr<const model::ModelFile> model_;
  std::shared_ptr<const cpu::CpuWeights> weights_;
  DetectorOptions options_;
  post::NmsParams nms_;
  int max_stride_ = 32;
  int nc_ = 0;
  std::list<std::pair<std::pair<int, int>, std::unique_ptr<cpu::CpuExecutor>>> executors_;
  std::vector<float> input_;   // (batch, 3, H, W) letterboxed images
  std::vector<float> output_;  // (batch, 4 + nc, A) raw head output
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const model::ModelFile> model,
                                          const DetectorOptions& options) {
  if (!model) throw ModelError("make_cpu_backend: no model");
  auto weights = cpu::load_weights(*model);
  return std::make_unique<CpuBackend>(std::move(model), std::move(weights), options);
}

}  // namespace yolo12
