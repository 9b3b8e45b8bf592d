// cpu/executor.hpp - runs a graph::Graph on the CPU (NCHW float32), multi-threaded: every op bound
// once (ops.hpp), then run in order, then the head's decode.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/executor.hpp"
#include "graph/graph.hpp"

namespace yolo12::model {
class ModelFile;
}

namespace yolo12::cpu {

// Every tensor of the model as float32, converted once and shared (read-only) by all executors.
struct CpuWeights {
  std::unordered_map<std::string, std::vector<float>> tensors;
  const std::vector<float>& get(const std::string& name) const;  // throws ModelError if absent
};
std::shared_ptr<const CpuWeights> load_weights(const model::ModelFile& file);

// Fuses nothing (ExecutorCaps all false): the pipeline letterboxes on the host and runs the NMS.
class CpuExecutor final : public Executor {
 public:
  // Builds the graph for input_h x input_w and plans buffers for up to max_batch images.
  // threads = 0: hardware concurrency. keep_values = true gives every value its own memory (no
  // reuse between values whose lifetimes do not overlap), so value() can read any of them after a
  // forward(); for debugging and tests.
  CpuExecutor(std::shared_ptr<const CpuWeights> weights, const nlohmann::json& header, int input_h,
              int input_w, int max_batch, int threads, bool keep_values = false);
  // The same on a given graph, e.g. one a graph pass changed (graph::fuse_conv_chains; not
  // graph::pad_channels, whose widened convs the CPU refuses); its input size is g.input_h x g.input_w.
  CpuExecutor(std::shared_ptr<const CpuWeights> weights, graph::Graph g, int max_batch, int threads,
              bool keep_values = false);
  ~CpuExecutor() override;
  ExecutorCaps caps() const override { return {}; }
  const graph::Graph& graph() const override;
  int max_batch() const override;
  void run(const ExecutorRun& run) override;  // input -> raw only
  // x:   (batch, 3, input_h, input_w) float32, RGB in [0, 1]
  // out: (batch, 4 + nc, anchors) float32
  void forward(const float* x, int batch, float* out);
  int channels() const;  // 4 + nc
  int anchors() const;   // A
  // The (batch, c, h, w) contents of graph value `value` after the last forward(); only meaningful
  // for every value with keep_values (else later values may have overwritten it). Throws
  // InputError for the input value or an index out of range.
  std::vector<float> value(int value, int batch) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace yolo12::cpu
