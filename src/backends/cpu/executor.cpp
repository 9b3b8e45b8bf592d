// cpu/executor.cpp - runs a graph::Graph on the CPU. See executor.hpp.
//
// At construction: build the graph, look up every tensor the ops use (converted to float32 once,
// shared by all executors), prepack the GEMM conv weights, and plan one activation arena. Each value
// of the graph gets an offset in the arena from its lifetime in execution order (first to last op
// that touches it; graph/memory_plan.hpp, shared with the CUDA executor): values whose lifetimes
// overlap never share memory, the others may. The network input is read in place from the caller's
// tensor and the Detect output is written straight into the caller's output, so forward() allocates
// nothing and copies nothing it does not have to.
#include "backends/cpu/executor.hpp"

#include "graph/memory_plan.hpp"

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "backends/cpu/attention.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/detect_head.hpp"
#include "backends/cpu/resample.hpp"
#include "backends/cpu/thread_pool.hpp"
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

namespace {

// The resolved operands of one conv op.
struct ConvWeights {
  const float* weight = nullptr;  // (c_out, c_in / groups, k, k)
  const float* bias = nullptr;    // (c_out)
  const float* gamma = nullptr;   // (c_out) or null
  std::vector<float> packed;      // pack_conv_weight(weight) for the GEMM path; empty for depthwise
};

std::size_t numel(const graph::Value& v) { return static_cast<std::size_t>(v.c) * v.h * v.w; }

}  // namespace

struct CpuExecutor::State {
  std::shared_ptr<const CpuWeights> weights;
  graph::Graph g;
  int max_batch = 1;
  bool keep_values = false;
  ThreadPool pool;
  std::vector<ConvWeights> conv;       // per op (empty entries for non-conv ops)
  std::vector<std::size_t> offset;     // per value: offset in the arena (floats), per image
  std::vector<float> arena;            // max_batch * per-image plan
  std::size_t arena_per_image = 0;
  // Bound for the current forward():
  const float* input = nullptr;
  float* output = nullptr;

  State(std::shared_ptr<const CpuWeights> w, graph::Graph graph, int batch, int threads)
      : weights(std::move(w)), g(std::move(graph)), max_batch(batch), pool(threads) {}

  // Values are stored batch-outermost: image b of value v at base(v) + b * numel(v).
  float* base(int value) const {
    if (value == graph::Graph::kInputValue) return const_cast<float*>(input);  // only ever read
    if (value == g.output_value) return output;
    return const_cast<float*>(arena.data()) + offset[value] * max_batch;
  }
  TensorView view(const graph::ValueRef& r) const {
    if (!r.valid()) return TensorView{};
    const graph::Value& v = g.values[r.value];
    return TensorView{base(r.value), v.c, r.c0, r.c, v.h, v.w};
  }

  void resolve_weights();
  void plan_memory();
  void run_op(std::size_t i, int batch);
};

void CpuExecutor::State::resolve_weights() {
  conv.resize(g.ops.size());
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (g.ops[i].kind != graph::OpKind::Conv) continue;
    const graph::ConvOp& c = g.ops[i].conv;
    ConvWeights& cw = conv[i];
    const auto& w = weights->get(c.weight);
    const auto& b = weights->get(c.bias);
    const std::size_t want = static_cast<std::size_t>(c.c_out) * (c.c_in / c.groups) * c.k * c.k;
    auto wrong = [&](const std::string& name, std::size_t got, std::size_t expected) {
      throw ModelError("CPU backend: tensor '" + name + "' has " + std::to_string(got) + " elements, the op " +
                       g.ops[i].name + " needs " + std::to_string(expected) + "; re-export the model");
    };
    if (w.size() != want) wrong(c.weight, w.size(), want);
    if (b.size() != static_cast<std::size_t>(c.c_out)) wrong(c.bias, b.size(), c.c_out);
    cw.weight = w.data();
    cw.bias = b.data();
    if (!c.gamma.empty()) {
      const auto& gm = weights->get(c.gamma);
      if (gm.size() != static_cast<std::size_t>(c.c_out)) wrong(c.gamma, gm.size(), c.c_out);
      cw.gamma = gm.data();
    }
    if (!conv_is_depthwise(c.c_in, c.c_out, c.groups)) cw.packed = pack_conv_weight(cw.weight, c.c_out, c.c_in, c.k, c.groups);
  }
}

void CpuExecutor::State::plan_memory() {
  const std::size_t nv = g.values.size();
  std::vector<graph::Lifetime> life = graph::value_lifetimes(g);
  if (keep_values) {  // every value stays readable after the run: no two share memory
    for (graph::Lifetime& l : life)
      if (l.first != graph::Lifetime::kUnused) l = {0, static_cast<int>(g.ops.size())};
  }
  // The input and the output are the caller's buffers; every other value gets a slice of the arena
  // (per image, in floats, rounded up to 16 floats = 64 bytes).
  constexpr std::size_t kAlign = 16;
  std::vector<std::size_t> size(nv, 0);
  for (std::size_t v = 0; v < nv; ++v)
    if (static_cast<int>(v) != graph::Graph::kInputValue && static_cast<int>(v) != g.output_value)
      size[v] = (numel(g.values[v]) + kAlign - 1) / kAlign * kAlign;
  const graph::ArenaPlan plan = graph::plan_arena(life, size);
  offset.assign(nv, 0);
  for (std::size_t v = 0; v < nv; ++v)
    if (plan.offset[v] != graph::ArenaPlan::kNone) offset[v] = plan.offset[v];
  arena_per_image = plan.bytes;
  const std::size_t total = plan.naive_bytes;
  arena.assign(arena_per_image * static_cast<std::size_t>(max_batch), 0.f);
  std::ostringstream msg;
  msg << "CPU executor " << g.input_h << "x" << g.input_w << ": " << g.ops.size() << " ops, " << nv
      << " values, activations " << arena_per_image * 4 / 1024 << " KiB per image (" << total * 4 / 1024
      << " KiB without reuse), max batch " << max_batch << ", " << pool.size() << " threads";
  log::info(msg.str());
}

void CpuExecutor::State::run_op(std::size_t i, int batch) {
  const graph::Op& op = g.ops[i];
  switch (op.kind) {
    case graph::OpKind::Conv: {
      const graph::ConvOp& c = op.conv;
      ConvParams p;
      p.x = view(c.in);
      p.y = view(c.out);
      p.residual = view(c.residual);
      p.weight = conv[i].weight;
      p.packed = conv[i].packed.empty() ? nullptr : conv[i].packed.data();
      p.bias = conv[i].bias;
      p.gamma = conv[i].gamma;
      p.batch = batch;
      p.k = c.k;
      p.stride = c.stride;
      p.pad = c.pad;
      p.dilation = c.dilation;
      p.groups = c.groups;
      p.silu = c.act == graph::Act::SiLU;
      conv2d(p, pool);
      break;
    }
    case graph::OpKind::Upsample: {
      UpsampleParams p;
      p.in = view(op.upsample.in);
      p.out = view(op.upsample.out);
      p.batch = batch;
      p.factor = op.upsample.factor;
      upsample_nearest(p, pool);
      break;
    }
    case graph::OpKind::MaxPool: {
      MaxPoolParams p;
      p.in = view(op.maxpool.in);
      p.out = view(op.maxpool.out);
      p.batch = batch;
      p.k = op.maxpool.k;
      max_pool_same(p, pool);
      break;
    }
    case graph::OpKind::Copy: {
      CopyParams p;
      p.in = view(op.copy.in);
      p.out = view(op.copy.out);
      p.batch = batch;
      copy_channels(p, pool);
      break;
    }
    case graph::OpKind::Attention: {
      const graph::AttentionOp& a = op.attention;
      AttentionParams p;
      p.q = view(a.q);
      p.k = view(a.k);
      p.v = view(a.v);
      p.out = view(a.out);
      p.v_image = view(a.v_image);
      p.batch = batch;
      p.heads = a.heads;
      p.dqk = a.dqk;
      p.dv = a.dv;
      p.q_head_stride = a.q_head_stride;
      p.k_head_stride = a.k_head_stride;
      p.v_head_stride = a.v_head_stride;
      p.area = a.area;
      p.scale = a.scale;
      area_attention(p, pool);
      break;
    }
    case graph::OpKind::Detect: {
      const graph::DetectOp& d = op.detect;
      DetectParams p;
      for (const auto& r : d.box) p.box.push_back(view(r));
      for (const auto& r : d.cls) p.cls.push_back(view(r));
      p.strides = d.strides;
      p.out = view(d.out);
      p.batch = batch;
      p.nc = d.nc;
      p.reg_max = d.reg_max;
      detect_decode(p, pool);
      break;
    }
  }
}

CpuExecutor::CpuExecutor(std::shared_ptr<const CpuWeights> weights, const nlohmann::json& header, int input_h,
                         int input_w, int max_batch, int threads, bool keep_values) {
  if (!weights) throw ModelError("CPU backend: no weights");
  if (max_batch < 1) throw OptionError("max_batch must be at least 1, got " + std::to_string(max_batch));
  s_ = std::make_unique<State>(std::move(weights), graph::build_graph(header, input_h, input_w), max_batch, threads);
  const graph::Value& out = s_->g.values.at(s_->g.output_value);
  if (out.h != 1) throw ModelError("CPU backend: the graph output is not (4 + nc, 1, A)");
  s_->keep_values = keep_values;
  s_->resolve_weights();
  s_->plan_memory();
}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::forward(const float* x, int batch, float* out) {
  if (!x || !out) throw InputError("CpuExecutor::forward: null input or output");
  if (batch < 1 || batch > s_->max_batch)
    throw InputError("CpuExecutor::forward: batch " + std::to_string(batch) + " is outside 1.." +
                     std::to_string(s_->max_batch) + " (max_batch)");
  s_->input = x;
  s_->output = out;
  for (std::size_t i = 0; i < s_->g.ops.size(); ++i) s_->run_op(i, batch);
  s_->input = nullptr;
  s_->output = nullptr;
}

int CpuExecutor::channels() const { return s_->g.values[s_->g.output_value].c; }
int CpuExecutor::anchors() const { return s_->g.values[s_->g.output_value].w; }
const graph::Graph& CpuExecutor::graph() const { return s_->g; }
int CpuExecutor::max_batch() const { return s_->max_batch; }

void CpuExecutor::run(const ExecutorRun& r) {
  if (r.images || r.detections)
    throw InputError("CPU executor: takes letterboxed images and returns the raw head (no fused stages)");
  forward(r.input, r.batch, r.raw);
}

std::vector<float> CpuExecutor::value(int value, int batch) const {
  if (value <= graph::Graph::kInputValue || value >= static_cast<int>(s_->g.values.size()) ||
      value == s_->g.output_value || batch < 1 || batch > s_->max_batch)
    throw InputError("CpuExecutor::value: no stored value " + std::to_string(value) + " for batch " + std::to_string(batch));
  const float* p = s_->arena.data() + s_->offset[value] * s_->max_batch;
  return std::vector<float>(p, p + numel(s_->g.values[value]) * batch);
}

}  // namespace yolo12::cpu
