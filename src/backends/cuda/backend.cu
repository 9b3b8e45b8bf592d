// src/backends/cuda/backend.cu - the CUDA Backend (core/executor.hpp): one CUDA stream per Detector
// (per clone) and the model's packed weights, shared by every executor (one per input shape, made by
// the pipeline's cache) and every clone.
#include <memory>
#include <string>
#include <utility>

#include "common.cuh"
#include "core/executor.hpp"
#include "executor.cuh"
#include "graph/graph.hpp"
#include "model/model_file.hpp"
#include "preprocess.cuh"

namespace yolo12 {
namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const model::ModelFile> model, std::shared_ptr<const cuda::DeviceWeights> weights)
      : model_(std::move(model)), weights_(std::move(weights)) {
    YOLO12_CUDA_CHECK(cudaSetDevice(weights_->device));
    YOLO12_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  // The pipeline destroys its executors (which wait for their work) before the backend.
  ~CudaBackend() override {
    cudaSetDevice(weights_->device);
    if (stream_) cudaStreamDestroy(stream_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::unique_ptr<Executor> make_executor(const ExecutorConfig& cfg) override {
    return cuda::make_executor(weights_, *model_, cfg, stream_);
  }
  std::unique_ptr<Backend> clone() const override { return std::make_unique<CudaBackend>(model_, weights_); }
  std::string device_name() const override { return "cuda:" + std::to_string(weights_->device); }

 private:
  std::shared_ptr<const model::ModelFile> model_;
  std::shared_ptr<const cuda::DeviceWeights> weights_;
  cudaStream_t stream_ = nullptr;
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

bool in_cuda_device_memory(const void* p) {
  static const bool any_device = cuda_device_available();  // no runtime calls per image without a GPU
  cudaPointerAttributes a;
  return any_device && p && cuda::pointer_attributes(p, a) && a.type == cudaMemoryTypeDevice;
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const model::ModelFile> model, int device,
                                           Precision precision, int input_h, int input_w) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw OptionError(std::string("device cuda: no CUDA device is visible (") +
                      (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + "); use device cpu");
  }
  if (device < 0 || device >= count)
    throw OptionError("device cuda:" + std::to_string(device) + " does not exist (" + std::to_string(count) +
                      " CUDA device(s) visible)");
  // The set of convs (what the packing needs) is the same at every input size, and so is their widening
  // (network_graph: graph::pad_channels under the conv variant pad_channels, read here once; the executors
  // follow the weights).
  const graph::Graph g = cuda::network_graph(model->header(), input_h, input_w);
  auto weights = cuda::upload_weights(*model, g, precision, device);
  return std::make_unique<CudaBackend>(std::move(model), std::move(weights));
}

}  // namespace yolo12
