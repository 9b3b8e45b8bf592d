// src/backends/cuda/ops.cuh - how the CUDA executor runs the op table (graph/ops.hpp).
//
// Every op has one entry point, bind<T>(op, context), in the .cu file of its op family (conv.cu,
// elementwise.cu, attention.cu). It asks the kernels' can_implement (a ModelError naming the op when
// they cannot run it, so a model fails when the executor is built, never mid-inference), fills the
// kernel's params struct (which derives from the op's attributes) with the op's buffers, and returns a
// Step: the launch for a batch, the profile label and the op's costs. The declarations below come
// from YOLO12_GRAPH_OPS, so a new op in the table is a link error until its CUDA bind exists. The
// executor binds every op once, with one std::visit; the head is bound by detect.cuh's DetectHead.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv.cuh"
#include "graph/graph.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12 {
class TuneCache;  // core/tune_cache.hpp
}

namespace yolo12::cuda {

// One network op bound to its buffers: run(batch, stream) enqueues it (no allocation, no
// synchronisation: capturable); the label and costs are what the per-op profile reports for it.
struct Step {
  std::function<void(int, cudaStream_t)> run;
  std::string label;           // e.g. "conv 3x3/2 64->128 g1 160x160->80x80 [implicit_gemm_f16]"
  double bytes_per_image = 0;  // activations read + written (lower bound)
  double weight_bytes = 0;     // weights read once per launch
  double flops_per_image = 0;  // multiply-adds x 2
  // Set where the op has kernels to choose from (fp16 convs): times them for `batch` images on the op's
  // own buffers (overwriting its output; synchronises, so never during capture), keeps the fastest for
  // run(batch), and returns its name (conv_plan_detail). With a cache (core/tune_cache.hpp), a choice
  // stored there for this op and batch is taken without timing, and a new one is stored.
  struct Tuned {
    std::string plan;     // conv_plan_detail of the choice
    bool cached = false;  // taken from the cache
  };
  std::function<Tuned(int batch, cudaStream_t, TuneCache* cache)> tune;
};

// The packed weights of one model at one precision on one device (executor.cuh: upload_weights).
// Immutable once built.
struct DeviceWeights {
  Precision precision = Precision::Fp32;
  int device = 0;
  std::size_t bytes = 0;
  void* data = nullptr;                                   // the one device buffer
  std::unordered_map<std::string, std::size_t> offsets;  // tensor name -> byte offset
  // Packed from a graph graph::pad_channels widened (network_graph, executor.cuh): the executors of these
  // weights widen theirs the same way, whatever the conv variant pad_channels says by then.
  bool padded_channels = false;
  ~DeviceWeights();
};

// What bind() may use: where every value lives (NHWC, T elements, at an arena offset), the uploaded
// weights, and the op's name for its errors.
template <typename T>
struct BindContext {
  const graph::Graph& graph;
  char* arena;                             // the activation arena
  const std::vector<std::size_t>& offset;  // per value: byte offset in the arena
  const DeviceWeights& weights;
  int max_batch;                           // what the buffers are planned for
  const std::string& op_name;

  const graph::Value& value(const graph::ValueRef& r) const { return graph.values[static_cast<std::size_t>(r.value)]; }
  // First element of the slice (channel c0 of pixel 0 of image 0); nullptr for an invalid ref.
  T* ptr(const graph::ValueRef& r) const {
    return r.valid() ? reinterpret_cast<T*>(arena + offset[static_cast<std::size_t>(r.value)]) + r.c0 : nullptr;
  }
  // Leading dimension of the slice's buffer: the channels of its whole value.
  int ld(const graph::ValueRef& r) const { return r.valid() ? value(r).c : 0; }
  // Weight tensor `name` as uploaded (packed T for conv weights, float32 for bias and gamma).
  template <typename W>
  const W* weight(const std::string& name) const {
    auto it = weights.offsets.find(name);
    if (it == weights.offsets.end())
      throw ModelError("CUDA backend: tensor '" + name + "' of op '" + op_name + "' was not uploaded");
    return reinterpret_cast<const W*>(static_cast<const char*>(weights.data) + it->second);
  }
  [[noreturn]] void cannot_run(const std::string& what) const {
    throw ModelError("CUDA backend: op '" + op_name + "': " + what +
                     " is not supported by the CUDA kernels; run this model with device cpu");
  }
};

#define YOLO12_CUDA_BIND(Name) \
  template <typename T>        \
  Step bind(const graph::Name##Op& op, const BindContext<T>& ctx);
YOLO12_GRAPH_OPS(YOLO12_CUDA_BIND)
#undef YOLO12_CUDA_BIND

// A conv op's kernel parameters on its buffers, for max_batch images (conv.cu): what bind<ConvOp> launches, and what
// the stride-2 pair of bind<ConvChainOp> hands conv2d_stem_pair_f16. A ModelError (cannot_run) where no conv kernel
// implements the shape.
template <typename T>
ConvParams<T> conv_params(const graph::ConvOp& op, const BindContext<T>& ctx);

// The one dispatch: any op of the graph through its bind above (the executor's, and the shared op
// tests', tests/ops).
template <typename T>
Step bind_op(const graph::Op& op, const BindContext<T>& ctx) {
  return graph::visit_op(op, [&](const auto& o) { return bind<T>(o, ctx); });
}

// The launch of a step whose kernel parameters carry the batch in `batch`: the parameters bound at
// build time, with the batch of each inference filled in.
template <typename P>
std::function<void(int, cudaStream_t)> with_batch(const P& p, void (*launch)(const P&, cudaStream_t)) {
  return [p, launch](int batch, cudaStream_t stream) {
    P q = p;
    q.batch = batch;
    launch(q, stream);
  };
}

}  // namespace yolo12::cuda
