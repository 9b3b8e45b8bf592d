// src/backends/cuda/executor.cuh - the static CUDA executor: one model, one input size, up to max_batch images,
// one precision, planned once and then replayed as a CUDA graph.
//
// Built from the graph of yolo12::graph::build_graph and the model file:
//   weights    every conv's weights packed once (conv_pack_weights) into ONE device buffer (fp32 or fp16,
//              bias and layer-scale gamma fp32), shared through a shared_ptr by every executor of the
//              model, of any input size, and by clones;
//   arena      ONE activation buffer; each NHWC value gets an offset planned from its lifetime in
//              execution order (greedy best fit, as ggml-alloc): a value lives from the first op that
//              touches it to the last, and a freed range is reused by later values;
//   workspace  Detect's candidate lists, the class filter, the staging block of the 8-bit images, the
//              kept boxes; all sized for max_batch when the executor is built.
// Every kernel's can_implement is asked while building, so an unsupported shape fails there with a
// ModelError naming the op, never halfway through an inference.
//
// detect(): the images are packed into pinned staging memory on the host; then ONE CUDA graph (per
// batch size, captured on first use) does H2D of the block, letterbox, the network, decode, NMS and the
// D2H of the kept boxes and their counts; the host waits once, at the end. Nothing is allocated and
// nothing synchronises inside. The H2D node's size is patched per call (images differ in size).
// forward_raw(): the parity path (fp32 NCHW tensor in, raw head (B, 4 + nc, A) out), not captured; its
// two buffers are allocated on its first use.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda_runtime.h>

#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::model {
class ModelFile;
}
namespace yolo12::graph {
struct Graph;
}

namespace yolo12::cuda {

// The packed weights of one model at one precision on one device. Immutable once built.
struct DeviceWeights {
  Precision precision = Precision::Fp32;
  int device = 0;
  std::size_t bytes = 0;
  void* data = nullptr;                                   // the one device buffer
  std::unordered_map<std::string, std::size_t> offsets;  // tensor name -> byte offset
  ~DeviceWeights();
};

// Packs and uploads every conv weight, bias and gamma that `graph` references (the set is the same for
// every input size). Synchronous; called once per model and precision.
std::shared_ptr<const DeviceWeights> upload_weights(const model::ModelFile& file, const graph::Graph& graph,
                                                    Precision precision, int device);

struct ExecutorConfig {
  int input_h = 640, input_w = 640;
  int max_batch = 1;
  Precision precision = Precision::Fp32;
  int device = 0;
  // Post-processing (Ultralytics predict semantics).
  float conf = 0.25f, iou = 0.7f;
  int max_det = 300;
  int max_nms = 30000;
  bool agnostic = false;
  std::vector<int> classes;  // empty: all
};

// What the plan costs, for the log and the benchmark.
struct MemoryPlan {
  std::size_t weights = 0;          // shared weight buffer
  std::size_t activations = 0;      // the arena (peak of the lifetime plan)
  std::size_t activations_naive = 0;  // every value in its own buffer
  std::size_t workspace = 0;        // Detect workspace + staging + outputs
  int values = 0, ops = 0;
};

// Device times of the last detect() call (events inside the graph), whole batch.
struct DeviceStageTimes {
  float preprocess_ms = 0, network_ms = 0, postprocess_ms = 0;
};

// One op of the network timed alone (benchmark's per-op profile).
struct OpProfile {
  std::string label;    // e.g. "conv 3x3/2 64->128 g1 160x160->80x80 [implicit_gemm_f16]"
  double bytes = 0;     // activations read + written and weights read, whole batch (lower bound)
  double flops = 0;     // multiply-adds x 2, whole batch
  double median_ms = 0; // between CUDA events recorded around the op inside one captured graph
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual int input_h() const = 0;
  virtual int input_w() const = 0;
  virtual int max_batch() const = 0;
  virtual int channels() const = 0;  // 4 + nc
  virtual int anchors() const = 0;   // A
  virtual const MemoryPlan& plan() const = 0;

  // Raw head of the network on a float32 NCHW host tensor (batch <= max_batch, 3, H, W) in [0, 1].
  // out: host (batch, 4 + nc, A). Synchronises.
  virtual void forward_raw(const float* nchw, int batch, float* out) = 0;

  // The whole pipeline. geometry[i] = pre::letterbox_params for images[i] with dst equal to this
  // executor's input size. Returns per image the kept detections in letterboxed input pixels, by
  // descending score. Synchronises once at the end.
  virtual std::vector<std::vector<Detection>> detect(const std::vector<ImageView>& images,
                                                     const std::vector<pre::LetterboxParams>& geometry) = 0;
  virtual DeviceStageTimes last_times() const = 0;

  // Benchmark hooks: stage a batch once, then enqueue the stages separately (no capture, no sync).
  virtual void stage_images(const std::vector<ImageView>& images,
                            const std::vector<pre::LetterboxParams>& geometry) = 0;
  virtual void enqueue_preprocess(int batch) = 0;  // H2D of the staged block + letterbox
  virtual void enqueue_network(int batch) = 0;
  virtual void enqueue_postprocess(int batch) = 0;  // decode + NMS + D2H of the kept boxes
  // Every network op timed alone: one graph with an event between every two ops, replayed
  // warmup + iters times; medians per op. The input must already be in place (enqueue_preprocess).
  virtual std::vector<OpProfile> profile_network(int batch, int warmup, int iters) = 0;
};

// Builds the graph for cfg.input_h x cfg.input_w, plans the memory and checks every op. The stream is
// the caller's (one per Detector); the executor never creates or destroys it. Throws ModelError for
// an op the kernels cannot run, CudaError for a CUDA failure.
std::unique_ptr<Executor> make_executor(std::shared_ptr<const DeviceWeights> weights, const model::ModelFile& file,
                                        const ExecutorConfig& cfg, cudaStream_t stream);

}  // namespace yolo12::cuda
