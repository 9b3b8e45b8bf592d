// cpu/executor.cpp - runs a graph::Graph on the CPU. See executor.hpp.
//
// At construction: build the graph, bind every op once (ops.hpp: each op's bind looks up its tensors,
// converted to float32 once and shared by all executors, and prepacks the GEMM conv weights), bind
// the head's decode, and plan one activation arena. Each value of the graph gets an offset in the
// arena from its lifetime in execution order (first to last op that touches it; graph/memory_plan.hpp,
// shared with the CUDA executor): values whose lifetimes overlap never share memory, the others may.
// The network input is read in place from the caller's tensor and the head writes the raw output
// straight into the caller's buffer, so forward() allocates nothing and copies nothing it does not
// have to.
#include "backends/cpu/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/ops.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "core/env.hpp"
#include "core/log.hpp"
#include "graph/memory_plan.hpp"
#include "model/model_file.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cpu {

const std::vector<float>& CpuWeights::get(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw ModelError("CPU backend: tensor '" + name + "' is not in the model; re-export the model with exporter/export.py");
  return it->second;
}

std::shared_ptr<const CpuWeights> load_weights(const model::ModelFile& file) {
  auto w = std::make_shared<CpuWeights>();
  for (const auto& t : file.tensors()) w->tensors.emplace(t.name, file.tensor_f32(t.name));
  return w;
}

const std::vector<float>& BindContext::tensor(const std::string& name, std::size_t numel) const {
  const std::vector<float>& t = weights.get(name);
  if (t.size() != numel)
    throw ModelError("CPU backend: tensor '" + name + "' has " + std::to_string(t.size()) + " elements, the op " +
                     op_name + " needs " + std::to_string(numel) + "; re-export the model");
  return t;
}

namespace {

std::size_t numel(const graph::Value& v) { return static_cast<std::size_t>(v.c) * v.h * v.w; }

// How long the pool's threads poll for the next op's loop before they sleep (ThreadPool's `spin`). The network runs
// one parallel loop per op, and a worker put to sleep between two of them costs a wake-up each time: yolo12n at 320 on
// two threads 32.1 ms -> 27.0 ms a forward with the poll (docs/benchmarks-cpu.md, "Twenty-seventh session"). 200 us
// covers the gap between two ops with room to spare, and lets the threads sleep soon after an inference.
// YOLO12_CPU_SPIN_US (microseconds, 0 to 1,000,000; 0: sleep at once) sets it; read when an executor is made.
constexpr long kCpuSpinUs = 200;
std::chrono::microseconds cpu_spin() {
  return std::chrono::microseconds(env_count("YOLO12_CPU_SPIN_US", kCpuSpinUs, 1000000));
}

}  // namespace

struct CpuExecutor::State final : ValueViews {
  std::shared_ptr<const CpuWeights> weights;
  graph::Graph g;
  int max_batch = 1;
  bool keep_values = false;
  ThreadPool pool;
  std::vector<Step> steps;          // one per op, in order
  HeadStep head;
  std::vector<std::size_t> offset;  // per value: offset in the arena (floats), per image
  std::vector<float> arena;         // max_batch * per-image plan
  std::size_t arena_per_image = 0;
  const float* input = nullptr;     // bound for the current forward()

  State(std::shared_ptr<const CpuWeights> w, graph::Graph graph, int batch, int threads)
      : weights(std::move(w)), g(std::move(graph)), max_batch(batch), pool(threads, cpu_spin()) {}

  // Values are stored batch-outermost: image b of value v at base(v) + b * numel(v).
  float* base(int value) const {
    if (value == graph::Graph::kInputValue) return const_cast<float*>(input);  // only ever read
    return const_cast<float*>(arena.data()) + offset[value] * max_batch;
  }
  TensorView view(const graph::ValueRef& r) const override {
    if (!r.valid()) return TensorView{};
    const graph::Value& v = g.values[r.value];
    return TensorView{base(r.value), v.c, r.c0, r.c, v.h, v.w};
  }

  void bind() {
    for (const graph::Op& op : g.ops) {
      const BindContext ctx{g, *weights, op.name};
      steps.push_back(bind_op(op, ctx));
    }
    const std::string head_name = "head";
    head = bind_head(g.head, BindContext{g, *weights, head_name});
  }
  void plan_memory();
};

void CpuExecutor::State::plan_memory() {
  const std::size_t nv = g.values.size();
  std::vector<graph::Lifetime> life = graph::value_lifetimes(g);
  if (keep_values) {  // every value stays readable after the run: no two share memory
    for (graph::Lifetime& l : life)
      if (l.first != graph::Lifetime::kUnused) l = {0, static_cast<int>(g.ops.size())};
  }
  // The input is the caller's buffer; every other value gets a slice of the arena (per image, in
  // floats, rounded up to 16 floats = 64 bytes).
  constexpr std::size_t kAlign = 16;
  std::vector<std::size_t> size(nv, 0);
  for (std::size_t v = 0; v < nv; ++v)
    if (static_cast<int>(v) != graph::Graph::kInputValue) size[v] = (numel(g.values[v]) + kAlign - 1) / kAlign * kAlign;
  const graph::ArenaPlan plan = graph::plan_arena(life, size);
  offset.assign(nv, 0);
  for (std::size_t v = 0; v < nv; ++v)
    if (plan.offset[v] != graph::ArenaPlan::kNone) offset[v] = plan.offset[v];
  arena_per_image = plan.bytes;
  arena.assign(arena_per_image * static_cast<std::size_t>(max_batch), 0.f);
  std::ostringstream msg;
  msg << "CPU executor " << g.input_h << "x" << g.input_w << ": " << g.ops.size() << " ops, " << nv
      << " values, activations " << arena_per_image * 4 / 1024 << " KiB per image (" << plan.naive_bytes * 4 / 1024
      << " KiB without reuse), max batch " << max_batch << ", " << pool.size() << " threads";
  log::info(msg.str());
}

CpuExecutor::CpuExecutor(std::shared_ptr<const CpuWeights> weights, const nlohmann::json& header, int input_h,
                         int input_w, int max_batch, int threads, bool keep_values)
    : CpuExecutor(std::move(weights), graph::build_graph(header, input_h, input_w), max_batch, threads, keep_values) {}

CpuExecutor::CpuExecutor(std::shared_ptr<const CpuWeights> weights, graph::Graph g, int max_batch, int threads,
                         bool keep_values) {
  if (!weights) throw ModelError("CPU backend: no weights");
  if (max_batch < 1) throw OptionError("max_batch must be at least 1, got " + std::to_string(max_batch));
  s_ = std::make_unique<State>(std::move(weights), std::move(g), max_batch, threads);
  s_->keep_values = keep_values;
  s_->bind();
  s_->plan_memory();
}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::forward(const float* x, int batch, float* out) {
  if (!x || !out) throw InputError("CpuExecutor::forward: null input or output");
  if (batch < 1 || batch > s_->max_batch)
    throw InputError("CpuExecutor::forward: batch " + std::to_string(batch) + " is outside 1.." +
                     std::to_string(s_->max_batch) + " (max_batch)");
  s_->input = x;
  for (const Step& step : s_->steps) step.run(*s_, batch, s_->pool);
  s_->head(*s_, batch, out, s_->pool);
  s_->input = nullptr;
}

int CpuExecutor::channels() const { return s_->g.head.raw_channels(); }
int CpuExecutor::anchors() const { return s_->g.head.raw_anchors(); }
const graph::Graph& CpuExecutor::graph() const { return s_->g; }
int CpuExecutor::max_batch() const { return s_->max_batch; }

void CpuExecutor::run(const ExecutorRun& r) {
  if (r.images || r.detections)
    throw InputError("CPU executor: takes letterboxed images and returns the raw head (no fused stages)");
  forward(r.input, r.batch, r.raw);
}

std::vector<float> CpuExecutor::value(int value, int batch) const {
  if (value <= graph::Graph::kInputValue || value >= static_cast<int>(s_->g.values.size()) || batch < 1 ||
      batch > s_->max_batch)
    throw InputError("CpuExecutor::value: no stored value " + std::to_string(value) + " for batch " + std::to_string(batch));
  const float* p = s_->arena.data() + s_->offset[value] * s_->max_batch;
  return std::vector<float>(p, p + numel(s_->g.values[value]) * batch);
}

}  // namespace yolo12::cpu
