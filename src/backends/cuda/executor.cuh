// src/backends/cuda/executor.cuh - the static CUDA executor: one model, one input size, up to max_batch
// images, one precision, planned once and then replayed as a CUDA graph.
//
// Built from the graph of yolo12::graph::build_graph, widened by graph::pad_channels (network_graph below),
// and the model file:
//   weights    every conv's weights packed once (conv_pack_weights) into ONE device buffer (fp32 or fp16,
//              bias and layer-scale gamma fp32), shared through a shared_ptr by every executor of the
//              model, of any input size, and by clones;
//   arena      ONE activation buffer; each NHWC value gets an offset (graph/schedule.hpp,
//              plan_concurrent): two values share bytes only where every op touching one is ordered
//              before every op touching the other, so that reuse never serialises branches;
//   streams    the network runs on up to YOLO12_CUDA_STREAMS streams (default 4; 1 = the execution
//              order on the caller's stream with ggml-alloc style reuse, graph/memory_plan.hpp): the
//              caller's stream plus side streams this executor owns, forked from and joined back to
//              the caller's stream with events, so independent branches (the Detect head's chains, a
//              level's head beside the neck) run at once, in the captured graph and the parity path;
//   workspace  Detect's candidate lists, the class filter, the staging block of the 8-bit images, the
//              kept boxes; all sized for max_batch when the executor is built.
// Every kernel's can_implement is asked while building, so an unsupported shape fails there with a
// ModelError naming the op, never halfway through an inference.
//
// run() with images (fused preprocess + NMS): the images are packed into pinned staging memory on the
// host (those already in page-locked memory are copied to the device straight from it, those in device
// memory are read in place: preprocess.cuh); then ONE CUDA graph (per batch size, captured on first use) does H2D of the block, letterbox,
// the network, decode, NMS and the D2H of the kept boxes and their counts; the host waits once, at the
// end. Nothing is allocated and nothing synchronises inside. The H2D node's size is patched per call
// (images differ in size). run() with a float tensor: the parity path (fp32 NCHW tensor in, raw head
// (B, 4 + nc, A) out), not captured; its two buffers are allocated on its first use.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json_fwd.hpp>

#include "core/executor.hpp"
#include "ops.cuh"
#include "yolo12/yolo12.hpp"

namespace yolo12::model {
class ModelFile;
}

namespace yolo12::cuda {

// The graph the CUDA backend packs and runs at input_h x input_w: graph::build_graph, then, where `pad`,
// graph::pad_channels (conv-to-conv values widened to a multiple of 8 channels; their indices in *widened).
// make_cuda_backend (and the benchmark) pack the weights from the graph of the first form, whose pad is the
// conv variant pad_channels (conv_detail::ConvVariants, YOLO12_CONV_VARIANTS); every executor builds its
// graph with pad = DeviceWeights::padded_channels, so that it runs the layout its weights were packed in.
// The pass looks at channels only, so the graphs of all input sizes widen the same convs.
graph::Graph network_graph(const nlohmann::json& header, int input_h, int input_w);
graph::Graph network_graph(const nlohmann::json& header, int input_h, int input_w, bool pad,
                           std::vector<int>* widened = nullptr);

// Packs and uploads every conv weight, bias and gamma that `graph` references (the set is the same for
// every input size), from the stored tensors into the graph's (possibly widened) layout, zeros in the
// widened channels; DeviceWeights::padded_channels says whether any conv was widened. Synchronous;
// called once per model and precision.
std::shared_ptr<const DeviceWeights> upload_weights(const model::ModelFile& file, const graph::Graph& graph,
                                                    Precision precision, int device);
// The same from any source of float32 tensors by name (the model file above; the shared op tests'
// weights, tests/ops).
using TensorSource = std::function<std::vector<float>(const std::string& name)>;
std::shared_ptr<const DeviceWeights> upload_weights(const TensorSource& tensor, const graph::Graph& graph,
                                                    Precision precision, int device);

// What the plan costs, for the log and the benchmark.
struct MemoryPlan {
  std::size_t weights = 0;          // shared weight buffer
  std::size_t activations = 0;      // the arena (peak of the lifetime plan)
  std::size_t activations_naive = 0;  // every value in its own buffer
  std::size_t workspace = 0;        // Detect workspace + staging + outputs
  int values = 0, ops = 0;
};

// The CUDA executor: ExecutorCaps fused_preprocess and fused_nms. run() with images replays the
// inference graph of that batch size (captured on first use); with a float tensor it runs the parity
// path. Besides the Executor interface it shows, read-only, what it planned and bound: the profiler
// (profile.cuh) times its network from these.
class CudaExecutor : public yolo12::Executor {
 public:
  virtual const MemoryPlan& plan() const = 0;
  virtual const std::vector<Step>& network() const = 0;  // the bound network ops, in execution order
  virtual cudaStream_t stream() const = 0;
  // Enqueues the network alone for `batch` images on stream() as run() does (the schedule's streams
  // fork from it and join it again), on whatever input the arena holds: the benchmark's figure.
  virtual void enqueue_network(int batch) = 0;
  // Kernel tuning (ExecutorConfig::tune_kernels or YOLO12_CONV_TUNE=1; otherwise a no-op):
  // times the candidate kernels of every fp16 conv for `batch` images on the arena and keeps the fastest
  // for all later launches at that batch; once per batch. With a tune cache (ExecutorConfig::tune_cache
  // or YOLO12_CONV_TUNE_CACHE; core/tune_cache.hpp) a conv whose choice the cache holds is not timed, and
  // the new choices are saved to it at the end (a file that cannot be written is a warning). run() does it before it captures a batch's graph, and
  // overwrites whatever the arena holds. Never during a capture on stream().
  virtual void tune(int batch) = 0;
};

// Builds the graph for cfg.input_h x cfg.input_w, plans the memory and checks every op. The stream is
// the caller's (one per Detector); the executor never creates or destroys it. Throws ModelError for
// an op the kernels cannot run, CudaError for a CUDA failure.
std::unique_ptr<CudaExecutor> make_executor(std::shared_ptr<const DeviceWeights> weights, const model::ModelFile& file,
                                            const ExecutorConfig& cfg, cudaStream_t stream);

}  // namespace yolo12::cuda
