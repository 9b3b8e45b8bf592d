// backends/cpu/cpu_backend.cpp - the CPU Backend: the model's tensors as float32, converted once and
// shared by every executor (one per input shape, made by the pipeline's cache) and every clone.
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/executor.hpp"
#include "core/executor.hpp"
#include "model/model_file.hpp"

namespace yolo12 {

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const model::ModelFile> model, std::shared_ptr<const cpu::CpuWeights> weights)
      : model_(std::move(model)), weights_(std::move(weights)) {}

  std::unique_ptr<Executor> make_executor(const ExecutorConfig& cfg) override {
    return std::make_unique<cpu::CpuExecutor>(weights_, model_->header(), cfg.input_h, cfg.input_w, cfg.max_batch,
                                              cfg.cpu_threads);
  }
  std::unique_ptr<Backend> clone() const override { return std::make_unique<CpuBackend>(model_, weights_); }
  std::string device_name() const override { return "cpu"; }

 private:
  std::shared_ptr<const model::ModelFile> model_;
  std::shared_ptr<const cpu::CpuWeights> weights_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const model::ModelFile> model) {
  if (!model) throw ModelError("make_cpu_backend: no model");
  auto weights = cpu::load_weights(*model);
  return std::make_unique<CpuBackend>(std::move(model), std::move(weights));
}

}  // namespace yolo12
