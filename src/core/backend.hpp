// core/backend.hpp - what a compute backend (CPU, CUDA) provides to the Detector.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "yolo12/yolo12.hpp"

namespace yolo12 {
namespace model {
class ModelFile;
}

class Backend {
 public:
  virtual ~Backend() = default;
  // Whole pipeline (letterbox, network, decode, NMS, boxes back to image pixels) on a batch of at
  // most options.max_batch images.
  virtual std::vector<Result> detect(const std::vector<ImageView>& images) = 0;
  // Network only, on a float32 NCHW tensor (B, 3, H, W); returns (B, 4 + nc, A) flattened.
  virtual std::vector<float> forward_raw(const float* nchw, int batch, int height, int width,
                                         int* channels, int* anchors) = 0;
  // A backend sharing the weights, with its own buffers / stream.
  virtual std::unique_ptr<Backend> clone() const = 0;
  virtual std::string device_name() const = 0;
};

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const model::ModelFile> model,
                                          const DetectorOptions& options);
// Throws OptionError when this build has no CUDA backend or no GPU is present.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const model::ModelFile> model,
                                           const DetectorOptions& options);
// True when this build has the CUDA backend and at least one CUDA device is visible.
bool cuda_device_available();

}  // namespace yolo12
