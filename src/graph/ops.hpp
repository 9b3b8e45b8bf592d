// graph/ops.hpp - the op table: every primitive op of the static graph.
//
// Each op has ONE attributes struct (XAttrs), shared verbatim by the graph builder (src/graph), the
// CPU backend (src/backends/cpu: its params structs derive from it) and the CUDA backend
// (src/backends/cuda: its kernel params structs derive from it), and an op struct (XOp) holding the
// attributes, the operands as ValueRefs (channel slices of graph values) and the weight tensor names.
// Every op says which slices it reads and which it writes; the memory planner and the tests use that.
//
// YOLO12_GRAPH_OPS lists the ops once. From it come the OpKind enum, the Op variant, and in each
// backend the declaration of its one entry point per op, `bind(const XOp&, context)`, which checks,
// binds, labels and costs the op (src/backends/cpu/ops.hpp, src/backends/cuda/ops.cuh). An executor's
// dispatch is one std::visit over Op::op. Adding an op: docs/architecture.md, "Adding an op".
//
// Ops:                        computes (per image)
//   Conv      out = act(conv(in, W) + b) * (gamma ? gamma[c] : 1) + (residual ? residual : 0)
//   Upsample  out = nearest-neighbour upsample of in by `factor`
//   MaxPool   out = max-pool(in, k, stride 1, pad k/2), padding never wins
//   Copy      out = in (channel slice copy; only where a value must live in two concat buffers)
//   Attention area attention (see AttentionAttrs), optionally also writing v back out as an image
//   ConvChain convs that each read the previous one's output, run as one op (see ConvChainAttrs)
//
// Every op also says which values it may use as scratch (scratch()): memory the planner gives it for the op's
// duration, whose contents are undefined afterwards (only ConvChain has any).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/host_device.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::graph {

// A channel slice [c0, c0 + c) of a graph value. value == -1 means "none" (optional operands), and
// value == Graph::kInputValue (0) is the network input image (3, H, W).
struct ValueRef {
  int value = -1;
  int c0 = 0;
  int c = 0;
  bool valid() const { return value >= 0; }
};

enum class Act { None, SiLU };

struct ConvAttrs {
  int c_in = 0, c_out = 0;
  int k = 1, stride = 1, pad = 0, groups = 1, dilation = 1;
  Act act = Act::SiLU;

  YOLO12_HOST_DEVICE bool silu() const { return act == Act::SiLU; }
  // Output length along one axis for an input of length `in`; 0 when the (padded) input is shorter
  // than the kernel's span. 64-bit, so any int attributes give the exact answer.
  YOLO12_HOST_DEVICE long long out_size(long long in) const {
    const long long span = static_cast<long long>(dilation) * (k - 1) + 1;
    const long long padded = in + 2LL * pad;
    return padded < span || stride < 1 ? 0 : (padded - span) / stride + 1;
  }
};

struct UpsampleAttrs {
  int factor = 2;  // nearest neighbour, both axes
};

struct MaxPoolAttrs {
  int k = 5;  // odd; stride 1, pad k / 2
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
struct AttentionAttrs {
  int heads = 1;
  int dqk = 32, dv = 32;
  int q_head_stride = 96, k_head_stride = 96, v_head_stride = 96;
  int area = 1;
  float scale = 0.f;  // usually dqk ** -0.5
};

// The stored tensors' channels. The builder emits attrs that match the model file's tensors. The CUDA
// backend's graph::pad_channels (graph/pad_channels.hpp) may widen attrs.c_out and attrs.c_in (and the
// refs and values with them) to a multiple of 8 channels; the tensors keep their shapes, and
// weight_c_out / weight_c_in then say what they hold (0: as attrs). tensor_c_out() / tensor_c_in() are
// the one way to ask: the weight tensor is [tensor_c_out(), tensor_c_in() / groups, k, k], bias and
// gamma [tensor_c_out()]. The channels past them are zero weights, bias and gamma (the CUDA backend's
// upload_weights packs them so), so a widened output channel computes exactly 0 and a widened input
// channel adds exactly 0. The CPU backend runs unpadded graphs only.
struct ConvOp {
  ConvAttrs attrs;
  ValueRef in;        // (c_in, H, W)
  ValueRef out;       // (c_out, Ho, Wo)
  ValueRef residual;  // optional, same shape as out, added after act and gamma
  std::string weight;  // tensor name, [tensor_c_out(), tensor_c_in() / groups, k, k]
  std::string bias;    // tensor name, [tensor_c_out()]
  std::string gamma;   // optional layer-scale tensor name, [tensor_c_out()] ("" = none)
  int weight_c_out = 0, weight_c_in = 0;  // the stored tensors' channels where pad_channels widened attrs (0: as attrs)
  int tensor_c_out() const { return weight_c_out > 0 ? weight_c_out : attrs.c_out; }
  int tensor_c_in() const { return weight_c_in > 0 ? weight_c_in : attrs.c_in; }
  bool widened() const { return weight_c_out > 0 || weight_c_in > 0; }
  std::vector<ValueRef> reads() const { return {in, residual}; }
  std::vector<ValueRef> writes() const { return {out}; }
  std::vector<ValueRef> scratch() const { return {}; }
};

struct UpsampleOp {
  UpsampleAttrs attrs;
  ValueRef in, out;
  std::vector<ValueRef> reads() const { return {in}; }
  std::vector<ValueRef> writes() const { return {out}; }
  std::vector<ValueRef> scratch() const { return {}; }
};

struct MaxPoolOp {
  MaxPoolAttrs attrs;
  ValueRef in, out;
  std::vector<ValueRef> reads() const { return {in}; }
  std::vector<ValueRef> writes() const { return {out}; }
  std::vector<ValueRef> scratch() const { return {}; }
};

struct CopyOp {
  ValueRef in, out;
  std::vector<ValueRef> reads() const { return {in}; }
  std::vector<ValueRef> writes() const { return {out}; }
  std::vector<ValueRef> scratch() const { return {}; }
};

struct AttentionOp {
  AttentionAttrs attrs;
  ValueRef q, k, v;
  ValueRef out;      // (heads * dv, H, W)
  ValueRef v_image;  // optional (heads * dv, H, W)
  std::vector<ValueRef> reads() const { return {q, k, v}; }
  std::vector<ValueRef> writes() const { return {out, v_image}; }
  std::vector<ValueRef> scratch() const { return {}; }
};

// A chain of 1x1 convs run as one op: graph::fuse_conv_chains (graph/fuse_chains.hpp), a pass of the CUDA
// backend, makes one out of consecutive ConvOps where each reads exactly the output of the one before, so that
// a kernel can keep the intermediate maps on chip (the CUDA backend's conv2d_chain_f16). Link i computes
// exactly what links[i] as a ConvOp computes:
//   links[0].in is the chain's input (any slice); links[i + 1].in is links[i].out (the same slice);
//   links[i].residual is, where residual_link[i] >= 0, the output slice of the earlier link residual_link[i]
//   (which may live on chip only), else a value in memory (or none);
//   links[i].out is stored (written to memory) where stored[i]: something after the op reads it. The last
//   link's always is. The others are scratch: the planner gives them memory for the op's duration, which a
//   backend may use to run the links one by one (the CPU backend does), and they hold nothing afterwards.
// Each link is a 1x1 conv with stride 1, no padding, groups 1, dilation 1 (chain_pointwise), except that link 0 may
// be a depthwise k x k conv at stride 1 that keeps the map's size (chain_depthwise: the A2C2f attention's pe before
// its proj, Detect's 3x3 class convs); all links have the same H x W. The one other form is a stride-2 pair
// (chain_stride2_pair, graph::fuse_stride2_pairs): two links, each a 3x3 conv at stride 2 with pad 1, groups 1,
// dilation 1 (chain_stride2), link 1 reading link 0's output at its size (the network's stem and the conv after it).
// The third form is a stride-1 pair (chain_stride1_pair, graph::fuse_stride1_pairs): two links, each a 3x3 conv at
// stride 1 with pad 1, groups 1, dilation 1 (chain_stride1), link 1 reading link 0's output, link 0 without a
// residual and link 1's residual (if any) from memory (the bottlenecks of C3k2 and C3k: cv1, then cv2 + the input).
// The fourth form is a depthwise branch (chain_dw_branch, graph::fuse_dw_branches): five links, a depthwise 3x3 (link
// 0 and link 2, chain_depthwise with k 3) and 1x1 convs (links 1, 3 and 4, chain_pointwise), each reading the one
// before's output at the same H x W, none with a residual (the Detect head's class branch of YOLO11 and YOLO12).
struct ConvChainAttrs {
  static constexpr int kMaxLinks = 5;
  int links = 0;                                        // 2..kMaxLinks
  int residual_link[kMaxLinks] = {-1, -1, -1, -1, -1};  // < i, or -1 (links[i].residual from memory, or none)
  bool stored[kMaxLinks] = {};
};
inline bool chain_pointwise(const ConvAttrs& a) {
  return a.k == 1 && a.stride == 1 && a.pad == 0 && a.groups == 1 && a.dilation == 1;
}
inline bool chain_depthwise(const ConvAttrs& a) {
  return a.groups > 1 && a.groups == a.c_in && a.groups == a.c_out && a.k % 2 == 1 && a.stride == 1 &&
         a.pad == a.k / 2 && a.dilation == 1;
}
inline bool chain_stride2(const ConvAttrs& a) {
  return a.k == 3 && a.stride == 2 && a.pad == 1 && a.groups == 1 && a.dilation == 1;
}
inline bool chain_stride1(const ConvAttrs& a) {
  return a.k == 3 && a.stride == 1 && a.pad == 1 && a.groups == 1 && a.dilation == 1;
}

struct ConvChainOp {
  ConvChainAttrs attrs;
  std::vector<ConvOp> links;  // attrs.links of them, in order (their attrs, operands and tensor names)
  std::vector<ValueRef> reads() const {
    std::vector<ValueRef> r;
    if (links.empty()) return r;
    r.push_back(links[0].in);
    for (std::size_t i = 0; i < links.size(); ++i)
      if (attrs.residual_link[i] < 0) r.push_back(links[i].residual);
    return r;
  }
  std::vector<ValueRef> writes() const {
    std::vector<ValueRef> w;
    for (std::size_t i = 0; i < links.size(); ++i)
      if (attrs.stored[i]) w.push_back(links[i].out);
    return w;
  }
  std::vector<ValueRef> scratch() const {
    std::vector<ValueRef> w;
    for (std::size_t i = 0; i < links.size(); ++i)
      if (!attrs.stored[i]) w.push_back(links[i].out);
    return w;
  }
};
// A chain of the stride-2 pair form (above): two links, both chain_stride2.
inline bool chain_stride2_pair(const ConvChainOp& op) {
  return op.attrs.links == 2 && op.links.size() == 2 && chain_stride2(op.links[0].attrs) &&
         chain_stride2(op.links[1].attrs);
}
// A chain of the stride-1 pair form (above): two links, both chain_stride1.
inline bool chain_stride1_pair(const ConvChainOp& op) {
  return op.attrs.links == 2 && op.links.size() == 2 && chain_stride1(op.links[0].attrs) &&
         chain_stride1(op.links[1].attrs);
}

// A chain of the depthwise branch form (above): dw 3x3, 1x1, dw 3x3, 1x1, 1x1.
inline bool chain_dw_branch(const ConvChainOp& op) {
  const auto dw3 = [](const ConvAttrs& a) { return chain_depthwise(a) && a.k == 3; };
  return op.attrs.links == 5 && op.links.size() == 5 && dw3(op.links[0].attrs) && chain_pointwise(op.links[1].attrs) &&
         dw3(op.links[2].attrs) && chain_pointwise(op.links[3].attrs) && chain_pointwise(op.links[4].attrs);
}

// The op table. X(Name) names NameOp above.
#define YOLO12_GRAPH_OPS(X) X(Conv) X(Upsample) X(MaxPool) X(Copy) X(Attention) X(ConvChain)

#define YOLO12_OP_KIND(Name) Name,
enum class OpKind { YOLO12_GRAPH_OPS(YOLO12_OP_KIND) };
#undef YOLO12_OP_KIND

#define YOLO12_OP_ALTERNATIVE(Name) , Name##Op
using OpVariant = std::variant<std::monostate YOLO12_GRAPH_OPS(YOLO12_OP_ALTERNATIVE)>;
#undef YOLO12_OP_ALTERNATIVE

const char* op_kind_name(OpKind kind);

// One op of the graph: what it is and the module path that produced it (for logs and errors).
struct Op {
  std::string name;
  OpVariant op;  // never std::monostate in a built graph

  OpKind kind() const {
    if (op.index() == 0) throw Error("graph op '" + name + "' is empty");
    return static_cast<OpKind>(op.index() - 1);
  }
  template <typename T> const T& get() const { return std::get<T>(op); }
  template <typename T> const T* get_if() const { return std::get_if<T>(&op); }
};

// The convs an op computes: the op itself for a ConvOp, the links of a ConvChainOp, none for the others (what a
// backend packs weights for).
inline std::vector<const ConvOp*> convs_of(const Op& op) {
  if (const ConvOp* c = op.get_if<ConvOp>()) return {c};
  std::vector<const ConvOp*> r;
  if (const ConvChainOp* chain = op.get_if<ConvChainOp>())
    for (const ConvOp& l : chain->links) r.push_back(&l);
  return r;
}

// Calls f(const XOp&) with the op's alternative (f must take every op); an empty op is an Error.
template <typename F>
decltype(auto) visit_op(const Op& op, F&& f) {
  if (op.op.index() == 0) throw Error("graph op '" + op.name + "' is empty");
  return std::visit(
      [&](const auto& o) -> decltype(auto) {
        if constexpr (std::is_same_v<std::decay_t<decltype(o)>, std::monostate>)
          return f(std::get<1>(op.op));  // not reached (checked above); keeps one return type
        else
          return f(o);
      },
      op.op);
}

}  // namespace yolo12::graph
