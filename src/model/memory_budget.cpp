// model/memory_budget.cpp - see memory_budget.hpp.
#include "model/memory_budget.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "graph/graph.hpp"
#include "graph/memory_plan.hpp"
#include "model/model_file.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::model {
namespace {

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / static_cast<double>(1ull << 30));
  return buf;
}

}  // namespace

std::uint64_t MemoryBudget::total() const {
  return sat_add(sat_add(model_bytes, weight_bytes), sat_add(activation_bytes, io_bytes));
}

MemoryBudget memory_budget(const ModelFile& file, int input_h, int input_w, int batch) {
  MemoryBudget b;
  b.model_bytes = file.file_bytes();
  std::uint64_t params = 0;
  for (const TensorInfo& t : file.tensors()) params = sat_add(params, t.numel());
  b.weight_bytes = sat_mul(params, 2 * sizeof(float));

  const graph::Graph g = graph::build_graph(file.header(), input_h, input_w);
  // Per image, in floats, each value rounded up to 16 floats as the executors place them (every value
  // but the input image, the head's inputs included).
  std::vector<std::size_t> size(g.values.size(), 0);
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (static_cast<int>(v) == graph::Graph::kInputValue) continue;
    const graph::Value& x = g.values[v];
    const std::uint64_t n = sat_mul(sat_mul(static_cast<std::uint64_t>(x.c), static_cast<std::uint64_t>(x.h)),
                                    static_cast<std::uint64_t>(x.w));
    size[v] = static_cast<std::size_t>(sat_add(n, 15) / 16 * 16);
  }
  const graph::ArenaPlan plan = graph::plan_arena(graph::value_lifetimes(g), size);
  const auto images = static_cast<std::uint64_t>(batch < 1 ? 1 : batch);
  b.activation_bytes = sat_mul(sat_mul(plan.bytes, sizeof(float)), images);
  // The input image and the head's raw output (channels x anchors).
  const std::uint64_t per_image_io =
      sat_add(3ull * static_cast<std::uint64_t>(input_h) * static_cast<std::uint64_t>(input_w),
              sat_mul(static_cast<std::uint64_t>(g.head.raw_channels()), static_cast<std::uint64_t>(g.head.raw_anchors())));
  b.io_bytes = sat_mul(sat_mul(per_image_io, sizeof(float)), images);
  return b;
}

void check_memory_budget(const ModelFile& file, int input_h, int input_w, int batch, std::uint64_t limit_bytes) {
  const MemoryBudget b = memory_budget(file, input_h, input_w, batch);
  if (b.total() <= limit_bytes) return;
  throw OptionError("invalid option: " + file.path() + " at " + std::to_string(input_h) + "x" + std::to_string(input_w) +
                    " with max_batch " + std::to_string(batch) + " needs about " + gib(b.total()) + " of memory (" +
                    "activations " + gib(b.activation_bytes) + ", weights " + gib(b.weight_bytes + b.model_bytes) +
                    ", input and output " + gib(b.io_bytes) + "), above the limit of " + gib(limit_bytes) +
                    "; lower the batch or the input size, or raise max_memory_bytes");
}

}  // namespace yolo12::model
