// model/memory_budget.hpp - the host memory a Detector will need, computed from the model's
// metadata before anything is allocated, and the check against DetectorOptions::max_memory_bytes.
//
// The estimate is the CPU backend's (the larger one; the CUDA backend keeps most of this on the
// device, in f16 where asked): the file held in memory, the weights as float32 plus their packed
// GEMM copy, the activation arena (graph/memory_plan.hpp, the same plan the executors use) for
// `batch` images, and the batch's input tensor and head output.
#pragma once

#include <cstdint>

namespace yolo12::model {

class ModelFile;

struct MemoryBudget {
  std::uint64_t model_bytes = 0;       // the file, held in memory
  std::uint64_t weight_bytes = 0;      // float32 weights and their packed copy
  std::uint64_t activation_bytes = 0;  // batch x the per-image activation arena
  std::uint64_t io_bytes = 0;          // batch x (input tensor + raw head output)
  std::uint64_t total() const;
};

// Builds the graph for input_h x input_w (throws ModelError if the model cannot run that size) and
// plans its arena; allocates nothing else. Sums saturate rather than wrap.
MemoryBudget memory_budget(const ModelFile& file, int input_h, int input_w, int batch);

// Throws OptionError when memory_budget(...).total() exceeds limit_bytes; the message names the
// bytes needed, their parts, the limit, and what to change.
void check_memory_budget(const ModelFile& file, int input_h, int input_w, int batch, std::uint64_t limit_bytes);

}  // namespace yolo12::model
