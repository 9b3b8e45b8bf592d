// cpu/ops.hpp - how the CPU executor runs the op table (graph/ops.hpp).
//
// Every op has one entry point, bind(op, context), in the file of its op family (conv.cpp,
// attention.cpp, resample.cpp): it looks up and checks the op's weights (ModelError naming the op and
// the tensor), prepares what it can once (packed GEMM weights) and returns a Step that computes the
// op for a batch. The declarations below come from YOLO12_GRAPH_OPS, so a new op in the table is a
// link error until its CPU bind exists. The executor (executor.cpp) binds every op once when it is
// built; a forward() then runs the steps in order, then the head's decode (detect_head.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/tensor_view.hpp"
#include "graph/graph.hpp"

namespace yolo12::cpu {

class ThreadPool;
struct CpuWeights;

// Where the graph values are during one forward(): a ValueRef as the NCHW view of the current
// batch (an invalid ref gives an empty view).
class ValueViews {
 public:
  virtual TensorView view(const graph::ValueRef& r) const = 0;

 protected:
  ~ValueViews() = default;
};

// One op bound to its weights: run(values, batch, pool) computes it for `batch` images.
struct Step {
  std::function<void(const ValueViews&, int, ThreadPool&)> run;
  std::string label;  // e.g. "model.2.cv1 conv 1x1/1 32->32 g1"
};

// What bind() may use: the graph, the weights, and the op's name for its errors.
struct BindContext {
  const graph::Graph& graph;
  const CpuWeights& weights;
  const std::string& op_name;
  // Tensor `name` as float32, which must hold exactly `numel` values; ModelError naming the op else.
  const std::vector<float>& tensor(const std::string& name, std::size_t numel) const;
};

#define YOLO12_CPU_BIND(Name) Step bind(const graph::Name##Op& op, const BindContext& ctx);
YOLO12_GRAPH_OPS(YOLO12_CPU_BIND)
#undef YOLO12_CPU_BIND

// The one dispatch: any op of the graph through its bind above (the executor's, and the shared op
// tests', tests/ops).
inline Step bind_op(const graph::Op& op, const BindContext& ctx) {
  return graph::visit_op(op, [&](const auto& o) { return bind(o, ctx); });
}

// The head's decode after the last op: raw head output (batch, C, A) float32 into `raw`.
using HeadStep = std::function<void(const ValueViews&, int batch, float* raw, ThreadPool&)>;
HeadStep bind_head(const graph::HeadSpec& head, const BindContext& ctx);

}  // namespace yolo12::cpu
