// src/backends/cuda/backend.cu - the CUDA Backend behind yolo12::Detector (core/backend.hpp).
//
// One backend = one Detector: its own CUDA stream and its executors (src/backends/cuda/executor.cuh), one per network
// input shape (a single one in fixed mode; in rect mode one per rectangle met, the last few kept), all
// sharing the model's packed weights with every clone. Letterbox geometry and the final scale_boxes are
// the CPU's own functions (src/pre, src/post), so both backends map boxes back identically.
#include <algorithm>
#include <list>
#include <map>
#include <memory>
#include <utility>

#include "common.cuh"
#include "core/backend.hpp"
#include "executor.cuh"
#include "graph/graph.hpp"
#include "model/model_file.hpp"
#include "post/nms.hpp"
#include "pre/letterbox.hpp"

namespace yolo12 {
namespace {

constexpr std::size_t kMaxCachedShapes = 8;  // rect mode: executors kept for the most recent shapes

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const model::ModelFile> model, const DetectorOptions& options,
              std::shared_ptr<const cuda::DeviceWeights> weights)
      : model_(std::move(model)), options_(options), weights_(std::move(weights)) {
    YOLO12_CUDA_CHECK(cudaSetDevice(options_.device_index));
    YOLO12_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const auto strides = model_->header().at("strides").get<std::vector<int>>();
    max_stride_ = strides.empty() ? 32 : *std::max_element(strides.begin(), strides.end());
    // Plan the configured shape now, so a shape the kernels cannot run fails at construction.
    executor_for(options_.input_height, options_.input_width, options_.max_batch);
  }

  ~CudaBackend() override {
    cudaSetDevice(options_.device_index);
    executors_.clear();
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::vector<Result> detect(const std::vector<ImageView>& images) override {
    YOLO12_CUDA_CHECK(cudaSetDevice(options_.device_index));
    for (const ImageView& im : images) pre::check_image_view(im);
    // Rect letterbox only when every image has the same size (as Ultralytics: otherwise it pads all
    // of them to the full input size).
    bool rect = options_.rect;
    for (const ImageView& im : images)
      if (im.width != images[0].width || im.height != images[0].height) rect = false;
    std::vector<pre::LetterboxParams> geometry;
    geometry.reserve(images.size());
    for (const ImageView& im : images)
      geometry.push_back(pre::letterbox_params(im.width, im.height, options_.input_height, options_.input_width, rect,
                                               max_stride_));
    const int h = geometry[0].dst_h, w = geometry[0].dst_w;
    cuda::Executor& ex = executor_for(h, w, options_.max_batch);
    std::vector<std::vector<Detection>> dets = ex.detect(images, geometry);
    const cuda::DeviceStageTimes t = ex.last_times();
    const double n = static_cast<double>(images.size());
    std::vector<Result> results(images.size());
    for (std::size_t i = 0; i < images.size(); ++i) {
      post::scale_boxes(dets[i], geometry[i]);
      Result& r = results[i];
      r.detections = std::move(dets[i]);
      r.image_width = images[i].width;
      r.image_height = images[i].height;
      r.input_width = w;
      r.input_height = h;
      r.times.preprocess_ms = t.preprocess_ms / n;
      r.times.inference_ms = t.network_ms / n;
      r.times.postprocess_ms = t.postprocess_ms / n;
    }
    return results;
  }

  std::vector<float> forward_raw(const float* nchw, int batch, int height, int width, int* channels,
                                 int* anchors) override {
    YOLO12_CUDA_CHECK(cudaSetDevice(options_.device_index));
    cuda::Executor& ex = executor_for(height, width, options_.max_batch);
    const std::size_t in_per = static_cast<std::size_t>(3) * height * width;
    const std::size_t out_per = static_cast<std::size_t>(ex.channels()) * ex.anchors();
    std::vector<float> out(out_per * batch);
    for (int b0 = 0; b0 < batch; b0 += ex.max_batch()) {  // in chunks of the planned batch
      const int nb = std::min(ex.max_batch(), batch - b0);
      ex.forward_raw(nchw + in_per * b0, nb, out.data() + out_per * b0);
    }
    if (channels) *channels = ex.channels();
    if (anchors) *anchors = ex.anchors();
    return out;
  }

  std::unique_ptr<Backend> clone() const override {
    return std::make_unique<CudaBackend>(model_, options_, weights_);
  }

  std::string device_name() const override { return "cuda:" + std::to_string(options_.device_index); }

 private:
  std::shared_ptr<const model::ModelFile> model_;
  DetectorOptions options_;
  std::shared_ptr<const cuda::DeviceWeights> weights_;
  cudaStream_t stream_ = nullptr;
  int max_stride_ = 32;
  // Most recently used first.
  std::list<std::pair<std::pair<int, int>, std::unique_ptr<cuda::Executor>>> executors_;

  cuda::Executor& executor_for(int h, int w, int max_batch) {
    const auto key = std::make_pair(h, w);
    for (auto it = executors_.begin(); it != executors_.end(); ++it)
      if (it->first == key) {
        executors_.splice(executors_.begin(), executors_, it);
        return *executors_.front().second;
      }
    cuda::ExecutorConfig cfg;
    cfg.input_h = h;
    cfg.input_w = w;
    cfg.max_batch = max_batch;
    cfg.precision = options_.precision;
    cfg.device = options_.device_index;
    cfg.conf = options_.conf;
    cfg.iou = options_.iou;
    cfg.max_det = options_.max_det;
    cfg.agnostic = options_.agnostic_nms;
    cfg.classes = options_.classes;
    if (executors_.size() >= kMaxCachedShapes) {
      YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
      executors_.pop_back();
    }
    executors_.emplace_front(key, cuda::make_executor(weights_, *model_, cfg, stream_));
    return *executors_.front().second;
  }
};

}  // namespace

bool cuda_device_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const model::ModelFile> model,
                                           const DetectorOptions& options) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw OptionError(std::string("device cuda: no CUDA device is visible (") +
                      (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + "); use device cpu");
  }
  if (options.device_index < 0 || options.device_index >= count)
    throw OptionError("device cuda:" + std::to_string(options.device_index) + " does not exist (" +
                      std::to_string(count) + " CUDA device(s) visible)");
  // Weights are packed with the graph of the configured size; the set of convs is the same at any size.
  const int h = options.input_height > 0 ? options.input_height : model->info().input_height;
  const int w = options.input_width > 0 ? options.input_width : model->info().input_width;
  const graph::Graph g = graph::build_graph(model->header(), h, w);
  auto weights = cuda::upload_weights(*model, g, options.precision, options.device_index);
  return std::make_unique<CudaBackend>(std::move(model), options, std::move(weights));
}

}  // namespace yolo12
