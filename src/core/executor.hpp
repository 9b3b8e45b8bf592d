// core/executor.hpp - what a compute backend (src/backends/cpu, src/backends/cuda) gives the pipeline.
//
// A Backend holds one model's weights in the form its kernels want, shared by every executor it makes
// and by its clones. An Executor runs the static graph of ONE input size (graph::build_graph) on
// batches of up to max_batch images, with every buffer planned when it is made. The pipeline
// (src/pipeline) owns everything around it: validation, letterbox geometry, batch grouping, the
// executor cache, timing, box scaling and the Result.
//
// Every executor runs the network and the head's decode on letterboxed float images
// (ExecutorRun::input -> ::raw). Two capability flags say which other stages it runs itself:
//   fused_preprocess  it takes the 8-bit images and their letterbox geometry (ExecutorRun::images)
//                     and letterboxes them on its device;
//   fused_nms         it runs the head's NMS on its device and returns the kept detections
//                     (ExecutorRun::detections) instead of the raw head output.
// The pipeline runs every stage the executor does not fuse. The CPU executor fuses nothing; the CUDA
// executor fuses both into one CUDA graph replay (H2D, letterbox, network, decode, NMS, D2H).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "post/nms.hpp"
#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12 {
namespace model {
class ModelFile;
}
namespace graph {
struct Graph;
}

// Everything an executor is made for: one input size, the batch it is planned for, and the settings
// the pipeline resolved from DetectorOptions (the one place they are mapped).
struct ExecutorConfig {
  int input_h = 0, input_w = 0;  // multiples of the model's largest stride
  int max_batch = 1;
  Precision precision = Precision::Fp32;  // honoured by the CUDA backend
  int cpu_threads = 0;                    // CPU backend: 0 = hardware concurrency
  bool tune_kernels = false;              // CUDA backend, fp16: time each conv's kernels per batch (see
                                          // DetectorOptions::tune_kernels)
  std::string tune_cache;                 // CUDA backend: the tune cache file (DetectorOptions::tune_cache)
  post::NmsParams nms;                    // for executors with fused_nms
};

struct ExecutorCaps {
  bool fused_preprocess = false;
  bool fused_nms = false;
};

// One batch through an executor. Inputs: `input`, or (fused_preprocess) `images` + `geometry`.
// Outputs: `raw`, or (fused_nms) `detections`. An executor accepts `input` -> `raw` always, and the
// fused forms where its caps say so; any other combination is an InputError.
struct ExecutorRun {
  int batch = 0;                                // 1 .. max_batch
  const float* input = nullptr;                 // (batch, 3, H, W) float32 RGB in [0, 1], host
  const ImageView* images = nullptr;            // (batch) 8-bit images, checked by the pipeline
  const pre::LetterboxParams* geometry = nullptr;  // (batch) letterbox of each image to H x W
  float* raw = nullptr;                         // (batch, C, A) float32 raw head output, host
  std::vector<Detection>* detections = nullptr;  // (batch) kept boxes in input pixels, by score
  StageTimes* device_times = nullptr;           // optional: the fused stages' device times, whole batch
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual ExecutorCaps caps() const = 0;
  virtual const graph::Graph& graph() const = 0;  // input size, output maps and head of this executor
  virtual int max_batch() const = 0;
  // Runs one batch; synchronous (the outputs are ready on return).
  virtual void run(const ExecutorRun& run) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Builds the graph for cfg's input size, checks every op against the kernels (ModelError for one
  // they cannot run) and plans its memory.
  virtual std::unique_ptr<Executor> make_executor(const ExecutorConfig& cfg) = 0;
  // A backend sharing the weights, with its own state (a CUDA stream).
  virtual std::unique_ptr<Backend> clone() const = 0;
  virtual std::string device_name() const = 0;  // "cpu" or "cuda:N"
};

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const model::ModelFile> model);
// Throws OptionError when this build has no CUDA backend, no GPU is present or `device` does not
// exist. The weights are packed once for `precision`, from the graph at input_h x input_w.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const model::ModelFile> model, int device,
                                           Precision precision, int input_h, int input_w);
// True when this build has the CUDA backend and at least one CUDA device is visible.
bool cuda_device_available();
// True when `p` points into CUDA device memory (not host-readable); false without a CUDA device.
// A CPU detector refuses such images instead of reading them (docs/api.md).
bool in_cuda_device_memory(const void* p);

}  // namespace yolo12
