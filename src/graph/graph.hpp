// graph/graph.hpp - the static graph every backend executes.
//
// build_graph() expands the model file's module-level architecture (docs/model-format.md, "Layers")
// into a flat list of primitive ops in execution order, for one input size. Values are per-image
// feature maps (C, H, W); the batch is the executor's business, and so is the memory layout (the CPU
// backend stores NCHW, the CUDA backend NHWC). An op reads and writes *channel slices* of values
// (ValueRef), so a Concat costs nothing: producers write straight into their slice of the concat
// buffer, and a split is a view. Residual adds, layer-scale and activations are fused into the Conv.
//
// Ops:                        computes (per image)
//   Conv      out = act(conv(in, W) + b) * (gamma ? gamma[c] : 1) + (residual ? residual : 0)
//   Upsample  out = nearest-neighbour upsample of in by `factor`
//   MaxPool   out = max-pool(in, k, stride 1, pad k/2), padding never wins
//   Copy      out = in (channel slice copy; only where a value must live in two concat buffers)
//   Attention area attention (see AttentionOp), optionally also writing v back out as an image
//   Detect    raw head output (4 + nc, A): DFL box decode (cx, cy, w, h in input pixels) + sigmoid
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace yolo12::graph {

// One feature map of the graph (per image).
struct Value {
  std::string name;  // for logs and errors, e.g. "model.6.m.0.0.attn.qkv"
  int c = 0, h = 0, w = 0;
};

// A channel slice [c0, c0 + c) of a value. value == -1 means "none" (optional operands), and
// value == kInputValue is the network input image (3, H, W).
struct ValueRef {
  int value = -1;
  int c0 = 0;
  int c = 0;
  bool valid() const { return value >= 0; }
};

enum class Act { None, SiLU };

struct ConvOp {
  ValueRef in;                // (c_in, H, W)
  ValueRef out;               // (c_out, Ho, Wo)
  ValueRef residual;          // optional, same shape as out, added after act and gamma
  std::string weight;         // tensor name, [c_out, c_in / groups, k, k]
  std::string bias;           // tensor name, [c_out]
  std::string gamma;          // optional layer-scale tensor name, [c_out] ("" = none)
  int c_in = 0, c_out = 0;
  int k = 1, stride = 1, pad = 0, groups = 1, dilation = 1;
  Act act = Act::SiLU;
};

struct UpsampleOp {
  ValueRef in, out;
  int factor = 2;
};

struct MaxPoolOp {
  ValueRef in, out;
  int k = 5;  // stride 1, pad k / 2
};

struct CopyOp {
  ValueRef in, out;
};

// Softmax attention inside `area` contiguous chunks of the H*W tokens (row-major), per head.
// For head h and dimension d, the query channel is q.c0 + h * q_head_stride + d (d < dqk), likewise
// k (d < dqk) and v (d < dv). out channel h * dv + d holds sum_j softmax_j(scale * q.k_j) v_j.
// If v_image is valid, v is also written there, channel h * dv + d (the input of the pe conv).
// Tokens per chunk = H*W / area (need not be whole rows; H*W must be divisible by area).
// The builder sets q.c (likewise k.c, v.c) to the channel span the op touches from q.c0:
// (heads - 1) * q_head_stride + dqk. Layouts it emits: Ultralytics AAttn (q, k, v refs into one qkv
// value at c0 0 / 32 / 64, strides 96); turbo (q = qk[0, C), k = qk[C, 2C), v = the v conv output,
// strides 32, no v_image since v already is the pe input); PSA Attention (per head key_dim q, key_dim
// k, head_dim v, stride 2 * key_dim + head_dim, scale key_dim ** -0.5).
struct AttentionOp {
  ValueRef q, k, v;
  ValueRef out;       // (heads * dv, H, W)
  ValueRef v_image;   // optional (heads * dv, H, W)
  int heads = 1;
  int dqk = 32, dv = 32;
  int q_head_stride = 96, k_head_stride = 96, v_head_stride = 96;
  int area = 1;
  float scale = 0.f;  // usually dqk ** -0.5
};

struct DetectOp {
  std::vector<ValueRef> box;  // per level (4 * reg_max, H_l, W_l)
  std::vector<ValueRef> cls;  // per level (nc, H_l, W_l)
  std::vector<int> strides;   // per level
  ValueRef out;               // (4 + nc, 1, A), A = sum H_l * W_l; anchors P3, then P4, then P5
  int nc = 0, reg_max = 16;
};

enum class OpKind { Conv, Upsample, MaxPool, Copy, Attention, Detect };

struct Op {
  OpKind kind;
  std::string name;  // module path that produced it, for logs and errors
  ConvOp conv;
  UpsampleOp upsample;
  MaxPoolOp maxpool;
  CopyOp copy;
  AttentionOp attention;
  DetectOp detect;
};

// A tensor the architecture requires the model file to hold.
struct ParamSpec {
  std::string name;
  std::vector<long long> shape;
};

struct Graph {
  static constexpr int kInputValue = 0;  // values[0] is the input image (3, H, W)
  std::vector<Value> values;
  std::vector<Op> ops;                   // execution order
  int output_value = -1;                 // the Detect output (4 + nc, 1, A)
  std::vector<ParamSpec> params;         // every tensor the ops reference, in first-use order
  int input_h = 0, input_w = 0;
  int nc = 0, reg_max = 16;
  std::vector<int> strides;
};

// Expands `header["layers"]` (plus nc, reg_max, strides) for an input of input_h x input_w
// (multiples of the largest stride). Throws yolo12::ModelError naming the layer for an unknown
// module type or inconsistent fields.
Graph build_graph(const nlohmann::json& header, int input_h, int input_w);

// The tensors the architecture requires (names and shapes), independent of input size.
std::vector<ParamSpec> required_params(const nlohmann::json& header);

}  // namespace yolo12::graph
