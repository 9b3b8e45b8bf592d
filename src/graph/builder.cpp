// graph/builder.cpp - expands the module-level `layers` of a model header into primitive ops.
//
// The rules follow docs/model-format.md ("Layers"); the semantics of every block were read from the
// Ultralytics module definitions (block.py, head.py, tasks.py) and re-expressed here as ops.
//
// How values are laid out:
//  - Every layer writes its output into one ValueRef, its "home". A layer consumed by a Concat
//    lives inside that Concat's buffer (the first Concat that uses it), so the Concat itself costs
//    nothing; a second use of the same layer by another Concat is served by a Copy op.
//  - Blocks with an internal concat (C2f, C3k2, C3k, A2C2f, SPPF, C2PSA) allocate one buffer for it
//    and let each producer write its slice; chunk/split are slices (views) of that buffer.
//  - Residual adds, the A2C2f layer-scale and activations are carried by the ConvOp that produces
//    the value they apply to.
//
// required_params() runs the same expansion without the checks that depend on the input size, so
// the tensor list can never drift from what the ops reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::graph {
namespace {

using nlohmann::json;

// Every integer field of the header, and every channel count and map size the builder derives from
// them, lies within +-kMaxInt (2^24): the checked readers and dim() reject anything else, so no shape
// arithmetic here (done in 64 bits) can overflow and no float-to-int conversion is out of range.
constexpr long long kMaxInt = 1LL << 24;
// The module types layer_shape and expand_layer know (for the error on any other).
constexpr const char* kModuleTypes[] = {"Conv", "C2f", "C3k2", "A2C2f", "SPPF", "C2PSA", "Upsample", "Concat", "Detect"};
// Most repeats (n) of a block: Ultralytics' largest scales use 6; this bounds the graph's size.
constexpr int kMaxRepeats = 256;

std::string shape_str(int c, int h, int w) {
  std::ostringstream s;
  s << "(" << c << ", " << h << ", " << w << ")";
  return s.str();
}

// The layer currently being expanded, for error messages.
struct LayerCtx {
  int index = -1;
  std::string type;
  std::string prefix() const {
    std::ostringstream s;
    s << "model layer " << index << " (" << type << "): ";
    return s.str();
  }
};

class Builder {
 public:
  Builder(const json& header, int input_h, int input_w, bool check_input_size)
      : header_(header), check_input_size_(check_input_size) {
    g_.input_h = input_h;
    g_.input_w = input_w;
  }

  Graph build();

 private:
  const json& header_;
  bool check_input_size_;
  Graph g_;
  int nc_ = 0, reg_max_ = 16;
  std::vector<int> strides_;
  std::set<std::string> param_names_;
  LayerCtx ctx_;

  // ---- errors and field access ----------------------------------------------------------------
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(ctx_.prefix() + what +
                     "; re-export the model with exporter/export.py from a supported Ultralytics checkpoint");
  }
  const json& field(const json& layer, const char* key) const {
    if (!layer.is_object() || !layer.contains(key)) fail(std::string("missing field '") + key + "'");
    return layer.at(key);
  }
  // The checked integer reader: an integral, finite number within +-kMaxInt (1.0 counts as 1), else
  // ModelError naming `what`.
  int to_int(const json& v, const std::string& what) const {
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxInt)) return static_cast<int>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
      const std::int64_t i = v.get<std::int64_t>();
      if (i >= -kMaxInt && i <= kMaxInt) return static_cast<int>(i);
    } else if (v.is_number_float() && std::isfinite(v.get<double>())) {
      const double d = v.get<double>();
      if (std::floor(d) != d) fail(what + " must be an integer, got " + v.dump());
      if (std::fabs(d) <= static_cast<double>(kMaxInt)) return static_cast<int>(d);
    } else {
      fail(what + " must be an integer, got " + v.dump());
    }
    fail(what + " is out of range (at most " + std::to_string(kMaxInt) + " in magnitude), got " + v.dump());
  }
  int get_int(const json& layer, const char* key) const {
    return to_int(field(layer, key), std::string("field '") + key + "'");
  }
  int get_int_or(const json& layer, const char* key, int dflt) const {
    if (!layer.contains(key) || layer.at(key).is_null()) return dflt;
    return get_int(layer, key);
  }
  // A finite number.
  double get_num(const json& layer, const char* key) const {
    const json& v = field(layer, key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      fail(std::string("field '") + key + "' must be a finite number, got " + v.dump());
    return v.get<double>();
  }
  bool get_bool(const json& layer, const char* key) const {
    const json& v = field(layer, key);
    if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string get_str(const json& layer, const char* key) const {
    const json& v = field(layer, key);
    if (!v.is_string()) fail(std::string("field '") + key + "' must be a string, got " + v.dump());
    return v.get<std::string>();
  }
  void require_positive(int v, const char* what) const {
    if (v <= 0) fail(std::string(what) + " must be positive, got " + std::to_string(v));
  }
  // A channel count or map size computed (in 64 bits) from checked fields: within 0..kMaxInt.
  int dim(long long v, const std::string& what) const {
    if (v < 0 || v > kMaxInt)
      fail(what + " is " + std::to_string(v) + ", outside 0.." + std::to_string(kMaxInt));
    return static_cast<int>(v);
  }
  // int(c * ratio) as Ultralytics computes it (truncation), for a finite ratio.
  int scaled(int c, double ratio, const std::string& what) const {
    const double v = c * ratio;
    if (!(v > -1.0 && v < static_cast<double>(kMaxInt) + 1.0))
      fail(what + " int(" + std::to_string(c) + " * " + std::to_string(ratio) + ") is out of range");
    return static_cast<int>(v);
  }
  // Upsample's integer scale factor.
  int upsample_factor(const json& L) const {
    const double sc = get_num(L, "scale");
    if (!(sc >= 1.0 && sc <= static_cast<double>(kMaxInt)) || std::floor(sc) != sc)
      fail("scale must be a positive integer, got " + field(L, "scale").dump());
    return static_cast<int>(sc);
  }

  // ---- values and params ----------------------------------------------------------------------
  int new_value(const std::string& name, int c, int h, int w) {
    g_.values.push_back(Value{name, c, h, w});
    return static_cast<int>(g_.values.size()) - 1;
  }
  ValueRef whole(int value) const { return ValueRef{value, 0, g_.values[value].c}; }
  ValueRef temp(const std::string& name, int c, const ValueRef& like) {
    const Value& v = g_.values[like.value];
    return whole(new_value(name, c, v.h, v.w));
  }
  static ValueRef slice(const ValueRef& r, int c0, int c) { return ValueRef{r.value, r.c0 + c0, c}; }
  int H(const ValueRef& r) const { return g_.values[r.value].h; }
  int W(const ValueRef& r) const { return g_.values[r.value].w; }

  void add_param(const std::string& name, std::vector<long long> shape) {
    if (!param_names_.insert(name).second) fail("tensor '" + name + "' would be used twice");
    g_.params.push_back(ParamSpec{name, std::move(shape)});
  }

  // ---- op emitters ----------------------------------------------------------------------------
  struct ConvSpec {
    int c_out = 0, k = 1, stride = 1, pad = -1, groups = 1, dilation = 1;
    Act act = Act::SiLU;
    bool plain = false;     // nn.Conv2d at `path` (P.weight) rather than an Ultralytics Conv (P.conv.weight)
    ValueRef residual;      // optional
    std::string gamma;      // optional layer-scale tensor
  };

  // A conv from `in` at module path `path`. Writes into `out` when it is valid (its shape must
  // match), else into a new value named after the path. Returns the output ref.
  ValueRef conv(const std::string& path, const ValueRef& in, const ConvSpec& s, ValueRef out = {}) {
    const int c_in = in.c;
    const int pad = s.pad >= 0 ? s.pad : dim(1LL * s.dilation * (s.k - 1) / 2, path + " padding");
    require_positive(s.c_out, (path + " output channels").c_str());
    if (s.k < 1 || s.stride < 1 || s.dilation < 1 || s.groups < 1 || pad < 0)
      fail(path + ": impossible conv (k " + std::to_string(s.k) + ", stride " + std::to_string(s.stride) +
           ", pad " + std::to_string(pad) + ", groups " + std::to_string(s.groups) + ", dilation " +
           std::to_string(s.dilation) + ")");
    if (c_in % s.groups != 0 || s.c_out % s.groups != 0)
      fail(path + ": channels " + std::to_string(c_in) + " -> " + std::to_string(s.c_out) +
           " are not divisible by groups " + std::to_string(s.groups));
    const ConvAttrs attrs{c_in, s.c_out, s.k, s.stride, pad, s.groups, s.dilation, s.act};
    const int ho = dim(attrs.out_size(H(in)), path + " output height");
    const int wo = dim(attrs.out_size(W(in)), path + " output width");
    if (check_input_size_ && (ho < 1 || wo < 1))
      fail(path + ": input " + shape_str(c_in, H(in), W(in)) + " is too small for a " + std::to_string(s.k) +
           "x" + std::to_string(s.k) + " conv");
    if (!out.valid()) {
      out = whole(new_value(path, s.c_out, std::max(ho, 1), std::max(wo, 1)));
    } else if (out.c != s.c_out || (check_input_size_ && (H(out) != ho || W(out) != wo))) {
      fail(path + ": output " + shape_str(s.c_out, ho, wo) + " does not fit its destination " +
           shape_str(out.c, H(out), W(out)));
    }
    ConvOp c;
    c.attrs = attrs;
    c.in = in;
    c.out = out;
    c.residual = s.residual;
    c.weight = path + (s.plain ? ".weight" : ".conv.weight");
    c.bias = path + (s.plain ? ".bias" : ".conv.bias");
    c.gamma = s.gamma;
    add_param(c.weight, {s.c_out, c_in / s.groups, s.k, s.k});
    add_param(c.bias, {s.c_out});
    g_.ops.push_back(Op{path, std::move(c)});
    return out;
  }

  // Shorthand: an Ultralytics Conv(k, stride 1, autopad) with the given activation.
  ValueRef conv1(const std::string& path, const ValueRef& in, int c_out, int k, Act act, ValueRef out = {},
                 ValueRef residual = {}, int groups = 1) {
    ConvSpec s;
    s.c_out = c_out;
    s.k = k;
    s.act = act;
    s.groups = groups;
    s.residual = residual;
    return conv(path, in, s, out);
  }

  void copy(const std::string& name, const ValueRef& in, const ValueRef& out) {
    g_.ops.push_back(Op{name, CopyOp{in, out}});
  }

  // ---- blocks ---------------------------------------------------------------------------------
  // Ultralytics Bottleneck(c1, c2, shortcut, g, k=(k1, k2), e): cv1 (k1) then cv2 (k2, groups g),
  // plus the input when shortcut and c1 == c2.
  void bottleneck(const std::string& p, const ValueRef& in, const ValueRef& out, bool shortcut, int g, int k1,
                  int k2, double e) {
    const int c_ = static_cast<int>(out.c * e);
    ValueRef h = conv1(p + ".cv1", in, c_, k1, Act::SiLU);
    const bool add = shortcut && in.c == out.c;
    conv1(p + ".cv2", h, out.c, k2, Act::SiLU, out, add ? in : ValueRef{}, g);
  }

  // Ultralytics C3k(c1, c2, n, shortcut, g, e=0.5, k=3): cv3(cat(m(cv1(x)), cv2(x))).
  void c3k(const std::string& p, const ValueRef& in, const ValueRef& out, int n, bool shortcut, int g) {
    const int c_ = static_cast<int>(out.c * 0.5);
    require_positive(c_, (p + " hidden channels").c_str());
    ValueRef cat = temp(p + ".cat", 2 * c_, in);
    ValueRef x = conv1(p + ".cv1", in, c_, 1, Act::SiLU);
    for (int i = 0; i < n; ++i) {
      ValueRef dst = i == n - 1 ? slice(cat, 0, c_) : temp(p + ".m." + std::to_string(i), c_, in);
      bottleneck(p + ".m." + std::to_string(i), x, dst, shortcut, g, 3, 3, 1.0);
      x = dst;
    }
    if (n == 0) copy(p + ".m", x, slice(cat, 0, c_));
    conv1(p + ".cv2", in, c_, 1, Act::SiLU, slice(cat, c_, c_));
    conv1(p + ".cv3", cat, out.c, 1, Act::SiLU, out);
  }

  // C2f and C3k2: cv1 -> 2c split in two, each block on the previous output, cv2 on the concat.
  void c2f_like(const std::string& p, const json& L, const ValueRef& in, const ValueRef& out, bool is_c3k2) {
    const int n = get_int(L, "n");
    const double e = get_num(L, "e");
    const int g = get_int_or(L, "g", 1);
    const bool shortcut = get_bool(L, "shortcut");
    const bool use_c3k = is_c3k2 ? get_bool(L, "c3k") : false;
    if (n < 0 || n > kMaxRepeats) fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(n));
    const int c = scaled(out.c, e, "hidden channels");
    require_positive(c, "hidden channels int(c2 * e)");
    ValueRef cat = temp(p + ".cat", dim((2LL + n) * c, "concat channels (2 + n) * c"), in);
    conv1(p + ".cv1", in, 2 * c, 1, Act::SiLU, slice(cat, 0, 2 * c));
    for (int i = 0; i < n; ++i) {
      const std::string mp = p + ".m." + std::to_string(i);
      ValueRef src = slice(cat, (1 + i) * c, c), dst = slice(cat, (2 + i) * c, c);
      if (use_c3k)
        c3k(mp, src, dst, 2, shortcut, g);
      else
        bottleneck(mp, src, dst, shortcut, g, 3, 3, is_c3k2 ? 0.5 : 1.0);
    }
    conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
  }

  // Attention over `qkv`-style or separate projections; emits the AttentionOp, pe and proj.
  // Returns nothing: the proj conv writes `out` with `residual` (the block input) when valid.
  void attention_tail(const std::string& p, AttentionOp a, const ValueRef& like, int dim, int pe_k,
                      const ValueRef& proj_residual, const ValueRef& out) {
    const int hw = H(like) * W(like);
    if (check_input_size_ && hw % a.attrs.area != 0)
      fail(p + ": the " + std::to_string(H(like)) + "x" + std::to_string(W(like)) + " = " + std::to_string(hw) +
           " tokens cannot be cut into area=" + std::to_string(a.attrs.area) +
           " equal chunks; choose an input size whose feature map at this level has a token count divisible by " +
           std::to_string(a.attrs.area));
    const AttentionAttrs& at = a.attrs;
    a.out = temp(p + ".out", at.heads * at.dv, like);
    // The pe conv needs v as an image (channel h * dv + d). When v already is one (one head, or
    // heads packed back to back) it reads v in place; otherwise the attention op writes a copy.
    ValueRef pe_in;
    if (at.heads == 1 || at.v_head_stride == at.dv) {
      pe_in = slice(a.v, 0, at.heads * at.dv);
    } else {
      a.v_image = temp(p + ".v", at.heads * at.dv, like);
      pe_in = a.v_image;
    }
    g_.ops.push_back(Op{p, a});
    // x = attn_out + pe(v)  (pe: depthwise pe_k x pe_k, no activation)
    ValueRef x = conv1(p + ".pe", pe_in, dim, pe_k, Act::None, {}, a.out, dim);
    // proj (1x1, no activation), plus the block input where the block adds it
    conv1(p + ".proj", x, dim, 1, Act::None, out, proj_residual);
  }

  // Ultralytics ABlock (and the turbo variant): x = x + attn(x); out = x + mlp(x).
  void ablock(const std::string& p, const ValueRef& in, const ValueRef& out, int area, double mlp_ratio,
              const std::string& attn_kind, int pe_k) {
    const int dim = in.c;
    const int heads = dim / 32;
    if (dim % 32 != 0 || heads < 1) fail(p + ": ABlock width " + std::to_string(dim) + " is not a multiple of 32");
    AttentionOp a;
    a.attrs.heads = heads;
    a.attrs.dqk = a.attrs.dv = 32;
    a.attrs.area = area;
    a.attrs.scale = static_cast<float>(1.0 / std::sqrt(32.0));
    if (attn_kind == "qkv") {
      // one conv, per head [q 32 | k 32 | v 32]
      ValueRef qkv = conv1(p + ".attn.qkv", in, 3 * dim, 1, Act::None);
      a.q = slice(qkv, 0, 3 * dim - 64);
      a.k = slice(qkv, 32, 3 * dim - 64);
      a.v = slice(qkv, 64, 3 * dim - 64);
      a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = 96;
    } else if (attn_kind == "qk_v") {
      // turbo: qk holds all q (channels [0, dim)) then all k ([dim, 2 dim)); v is its own conv
      ValueRef qk = conv1(p + ".attn.qk", in, 2 * dim, 1, Act::None);
      ValueRef v = conv1(p + ".attn.v", in, dim, 1, Act::None);
      a.q = slice(qk, 0, dim);
      a.k = slice(qk, dim, dim);
      a.v = v;
      a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = 32;
    } else {
      fail("field 'attn' must be \"qkv\" or \"qk_v\", got \"" + attn_kind + "\"");
    }
    ValueRef x1 = temp(p + ".x1", dim, in);
    attention_tail(p + ".attn", a, in, dim, pe_k, in, x1);
    const int hidden = scaled(dim, mlp_ratio, "mlp hidden channels");
    require_positive(hidden, "mlp hidden channels");
    ValueRef h = conv1(p + ".mlp.0", x1, hidden, 1, Act::SiLU);
    conv1(p + ".mlp.1", h, dim, 1, Act::None, out, x1);
  }

  // Ultralytics PSABlock(c, attn_ratio 0.5, heads, shortcut=True).
  void psablock(const std::string& p, const ValueRef& in, const ValueRef& out, int heads) {
    const int dim = in.c;
    if (heads < 1 || dim % heads != 0)
      fail(p + ": width " + std::to_string(dim) + " is not divisible by " + std::to_string(heads) + " heads");
    const int head_dim = dim / heads;
    const int key_dim = static_cast<int>(head_dim * 0.5);
    if (key_dim < 1) fail(p + ": key_dim is 0 (head_dim " + std::to_string(head_dim) + ")");
    const int stride = 2 * key_dim + head_dim;
    ValueRef qkv = conv1(p + ".attn.qkv", in, dim + 2 * key_dim * heads, 1, Act::None);
    AttentionOp a;
    a.attrs.heads = heads;
    a.attrs.dqk = key_dim;
    a.attrs.dv = head_dim;
    a.q = slice(qkv, 0, qkv.c - key_dim - head_dim);
    a.k = slice(qkv, key_dim, qkv.c - key_dim - head_dim);
    a.v = slice(qkv, 2 * key_dim, qkv.c - 2 * key_dim);
    a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = stride;
    a.attrs.area = 1;
    a.attrs.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim)));
    ValueRef x1 = temp(p + ".x1", dim, in);
    attention_tail(p + ".attn", a, in, dim, 3, in, x1);
    ValueRef h = conv1(p + ".ffn.0", x1, 2 * dim, 1, Act::SiLU);
    conv1(p + ".ffn.1", h, dim, 1, Act::None, out, x1);
  }

  // ---- layers ---------------------------------------------------------------------------------
  struct LayerShape {
    int c = 0, h = 0, w = 0;
  };
  std::vector<LayerShape> shapes_;   // per layer output
  std::vector<ValueRef> home_;       // where each layer's output lives
  std::vector<std::vector<int>> from_;

  std::vector<int> parse_from(const json& L, int index) {
    const json& f = field(L, "from");
    std::vector<int> out;
    if (f.is_number_integer()) {
      out.push_back(to_int(f, "field 'from'"));
    } else if (f.is_array() && !f.empty()) {
      for (const json& x : f) {
        if (!x.is_number_integer()) fail("field 'from' must hold integers, got " + f.dump());
        out.push_back(to_int(x, "field 'from'"));
      }
    } else {
      fail("field 'from' must be an integer or a non-empty list, got " + f.dump());
    }
    for (int x : out) {
      if (x == -1 && index != 0) fail("from -1 (the input image) is only valid for layer 0");
      if (x < -1 || x >= index) fail("from " + std::to_string(x) + " is not an earlier layer");
    }
    if (index == 0 && (out.size() != 1 || out[0] != -1)) fail("layer 0 must read the input image (from -1)");
    return out;
  }

  LayerShape in_shape(int from) const {
    if (from == -1) return LayerShape{3, g_.input_h, g_.input_w};
    return shapes_[from];
  }

  // Output shape of a layer from its fields (first pass: needed to size concat buffers before
  // their producers are expanded).
  LayerShape layer_shape(const json& L, const std::string& type, const std::vector<int>& from) {
    const LayerShape x = in_shape(from[0]);
    auto check_c1 = [&]() {
      const int c1 = get_int(L, "c1");
      if (c1 != x.c)
        fail("c1 is " + std::to_string(c1) + " but layer " + std::to_string(from[0]) + " gives " +
             std::to_string(x.c) + " channels");
    };
    auto single = [&]() {
      if (from.size() != 1) fail("expects one input, got " + std::to_string(from.size()));
    };
    if (type == "Conv") {
      single();
      check_c1();
      const int k = get_int(L, "k"), s = get_int(L, "s"), d = get_int_or(L, "d", 1);
      if (k < 1 || s < 1 || d < 1) fail("impossible k/s/d");
      const int p = L.contains("p") && !L.at("p").is_null() ? get_int(L, "p") : dim(1LL * d * (k - 1) / 2, "padding");
      if (p < 0) fail("impossible p");
      const int c2 = get_int(L, "c2");
      require_positive(c2, "c2");
      ConvAttrs a;
      a.k = k, a.stride = s, a.pad = p, a.dilation = d;
      return LayerShape{c2, dim(a.out_size(x.h), "output height"), dim(a.out_size(x.w), "output width")};
    }
    if (type == "C2f" || type == "C3k2" || type == "A2C2f" || type == "SPPF" || type == "C2PSA") {
      single();
      check_c1();
      const int c2 = get_int(L, "c2");
      require_positive(c2, "c2");
      if (type == "C2PSA" && c2 != x.c) fail("C2PSA needs c1 == c2");
      return LayerShape{c2, x.h, x.w};
    }
    if (type == "Upsample") {
      single();
      const int f = upsample_factor(L);
      if (L.contains("mode") && get_str(L, "mode") != "nearest")
        fail("only mode \"nearest\" is supported, got \"" + get_str(L, "mode") + "\"");
      return LayerShape{x.c, dim(1LL * x.h * f, "output height"), dim(1LL * x.w * f, "output width")};
    }
    if (type == "Concat") {
      if (get_int_or(L, "dim", 1) != 1) fail("only dim 1 (channels) is supported");
      LayerShape s{0, x.h, x.w};
      long long c = 0;
      for (int f : from) {
        if (f == -1) fail("cannot concatenate the input image");
        const LayerShape y = in_shape(f);
        if (check_input_size_ && (y.h != x.h || y.w != x.w))
          fail("inputs have different sizes: layer " + std::to_string(from[0]) + " is " + std::to_string(x.h) +
               "x" + std::to_string(x.w) + ", layer " + std::to_string(f) + " is " + std::to_string(y.h) + "x" +
               std::to_string(y.w) + " (the input size must be a multiple of the largest stride)");
        c += y.c;
      }
      s.c = dim(c, "output channels");
      return s;
    }
    if (type == "Detect") {
      const int nc = get_int(L, "nc");
      require_positive(nc, "nc");
      long long a = 0;
      for (int f : from) a += 1LL * in_shape(f).h * in_shape(f).w;
      return LayerShape{4 + nc, 1, dim(a, "anchors")};
    }
    std::string known;
    for (const char* t : kModuleTypes) known += std::string(known.empty() ? "" : ", ") + t;
    fail("unknown module type; this engine implements " + known);
  }

  void expand_layer(int i, const json& L, const std::string& type);
  void detect(int i, const json& L);
};

void Builder::expand_layer(int i, const json& L, const std::string& type) {
  const std::string p = "model." + std::to_string(i);
  const std::vector<int>& from = from_[i];
  const ValueRef in = from[0] == -1 ? whole(Graph::kInputValue) : home_[from[0]];
  const ValueRef out = home_[i];

  if (type == "Conv") {
    ConvSpec s;
    s.c_out = get_int(L, "c2");
    s.k = get_int(L, "k");
    s.stride = get_int(L, "s");
    s.dilation = get_int_or(L, "d", 1);
    s.pad = get_int_or(L, "p", -1);  // -1: conv() pads by d * (k - 1) / 2 (layer_shape rejected p < 0)
    s.groups = get_int_or(L, "g", 1);
    const std::string act = L.contains("act") ? get_str(L, "act") : std::string("silu");
    if (act == "silu")
      s.act = Act::SiLU;
    else if (act == "none")
      s.act = Act::None;
    else
      fail("field 'act' must be \"silu\" or \"none\", got \"" + act + "\"");
    conv(p, in, s, out);
  } else if (type == "C2f") {
    c2f_like(p, L, in, out, false);
  } else if (type == "C3k2") {
    c2f_like(p, L, in, out, true);
  } else if (type == "A2C2f") {
    const int n = get_int(L, "n");
    const bool a2 = get_bool(L, "a2");
    const int area = a2 ? get_int(L, "area") : 1;  // unused (and often -1) without attention
    const bool residual = get_bool(L, "residual");
    const double mlp_ratio = get_num(L, "mlp_ratio");
    const double e = get_num(L, "e");
    const int g = get_int_or(L, "g", 1);
    const bool shortcut = get_bool(L, "shortcut");
    const std::string attn = a2 ? get_str(L, "attn") : std::string("qkv");
    const int pe_k = a2 ? get_int(L, "pe_k") : 7;
    if (n < 0 || n > kMaxRepeats) fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(n));
    if (area < 1) fail("area must be >= 1, got " + std::to_string(area));
    if (pe_k < 1 || pe_k % 2 == 0) fail("pe_k must be odd, got " + std::to_string(pe_k));
    const int c_ = scaled(out.c, e, "hidden channels");
    require_positive(c_, "hidden channels int(c2 * e)");
    if (a2 && c_ % 32 != 0) fail("hidden channels " + std::to_string(c_) + " are not a multiple of 32");
    ValueRef cat = temp(p + ".cat", dim((1LL + n) * c_, "concat channels (1 + n) * c"), in);
    conv1(p + ".cv1", in, c_, 1, Act::SiLU, slice(cat, 0, c_));
    for (int j = 0; j < n; ++j) {
      const std::string mp = p + ".m." + std::to_string(j);
      ValueRef src = slice(cat, j * c_, c_), dst = slice(cat, (j + 1) * c_, c_);
      if (a2) {
        ValueRef mid = temp(mp + ".0.out", c_, in);
        ablock(mp + ".0", src, mid, area, mlp_ratio, attn, pe_k);
        ablock(mp + ".1", mid, dst, area, mlp_ratio, attn, pe_k);
      } else {
        c3k(mp, src, dst, 2, shortcut, g);
      }
    }
    ConvSpec s;
    s.c_out = out.c;
    if (a2 && residual) {
      if (in.c != out.c) fail("a residual A2C2f needs c1 == c2");
      s.gamma = p + ".gamma";
      s.residual = in;
    }
    // The gamma tensor is listed right after cv2's weight and bias (first use).
    conv(p + ".cv2", cat, s, out);
    if (!s.gamma.empty()) add_param(s.gamma, {out.c});
  } else if (type == "SPPF") {
    const int k = get_int(L, "k");
    if (k < 1 || k % 2 == 0) fail("k must be odd, got " + std::to_string(k));
    const int c_ = in.c / 2;
    require_positive(c_, "hidden channels c1 / 2");
    // cv1 has SiLU in YOLOv8 / YOLO11 (Ultralytics' legacy SPPF row); "cv1_act" may say otherwise.
    const std::string act1 = L.contains("cv1_act") ? get_str(L, "cv1_act") : std::string("silu");
    if (act1 != "silu" && act1 != "none") fail("field 'cv1_act' must be \"silu\" or \"none\"");
    ValueRef cat = temp(p + ".cat", 4 * c_, in);
    conv1(p + ".cv1", in, c_, 1, act1 == "silu" ? Act::SiLU : Act::None, slice(cat, 0, c_));
    for (int j = 0; j < 3; ++j) {
      g_.ops.push_back(Op{p + ".m", MaxPoolOp{MaxPoolAttrs{k}, slice(cat, j * c_, c_), slice(cat, (j + 1) * c_, c_)}});
    }
    conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
  } else if (type == "C2PSA") {
    const int n = get_int(L, "n");
    const double e = get_num(L, "e");
    if (n < 0 || n > kMaxRepeats) fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(n));
    const int c = scaled(in.c, e, "hidden channels");
    require_positive(c, "hidden channels int(c1 * e)");
    dim(2LL * c, "hidden channels 2 * int(c1 * e)");
    const int heads = std::max(c / 64, 1);
    ValueRef cat = temp(p + ".cat", 2 * c, in);
    conv1(p + ".cv1", in, 2 * c, 1, Act::SiLU, slice(cat, 0, 2 * c));
    // b = cat[c, 2c) runs through the blocks; the last block writes back over b (b is no longer
    // read by then: its last op reads only the block's own temporaries).
    ValueRef x = slice(cat, c, c);
    for (int j = 0; j < n; ++j) {
      const std::string mp = p + ".m." + std::to_string(j);
      ValueRef dst = j == n - 1 ? slice(cat, c, c) : temp(mp + ".out", c, in);
      psablock(mp, x, dst, heads);
      x = dst;
    }
    conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
  } else if (type == "Upsample") {
    g_.ops.push_back(Op{p, UpsampleOp{UpsampleAttrs{upsample_factor(L)}, in, out}});
  } else if (type == "Concat") {
    // Producers already wrote into their slices; copy the inputs that live elsewhere.
    int c0 = 0;
    for (int f : from) {
      const ValueRef dst = slice(out, c0, shapes_[f].c);
      const ValueRef src = home_[f];
      if (src.value != dst.value || src.c0 != dst.c0) copy(p + " <- model." + std::to_string(f), src, dst);
      c0 += shapes_[f].c;
    }
  } else if (type == "Detect") {
    detect(i, L);
  }
}

void Builder::detect(int i, const json& L) {
  const std::string p = "model." + std::to_string(i);
  const std::vector<int>& from = from_[i];
  const int nc = get_int(L, "nc");
  const int reg_max = get_int(L, "reg_max");
  const bool legacy = get_bool(L, "legacy");
  const int c2 = get_int(L, "c2"), c3 = get_int(L, "c3");
  require_positive(reg_max, "reg_max");
  require_positive(c2, "c2");
  require_positive(c3, "c3");
  const json& ch = field(L, "ch");
  if (!ch.is_array() || ch.size() != from.size())
    fail("field 'ch' must list the channels of each of the " + std::to_string(from.size()) + " inputs");
  if (strides_.size() != from.size())
    fail("the header has " + std::to_string(strides_.size()) + " strides for " + std::to_string(from.size()) +
         " detection levels");
  if (nc != nc_) fail("nc " + std::to_string(nc) + " differs from the header's nc " + std::to_string(nc_));
  if (reg_max != reg_max_) fail("reg_max differs from the header's reg_max");
  DetectHead d;
  d.attrs = DetectAttrs{nc, reg_max};
  d.strides = strides_;
  for (std::size_t l = 0; l < from.size(); ++l) {
    const ValueRef x = home_[from[l]];
    if (!ch[l].is_number() || to_int(ch[l], "ch[" + std::to_string(l) + "]") != x.c)
      fail("ch[" + std::to_string(l) + "] is " + ch[l].dump() + " but layer " + std::to_string(from[l]) + " gives " +
           std::to_string(x.c) + " channels");
    if (check_input_size_ && (1LL * H(x) * strides_[l] != g_.input_h || 1LL * W(x) * strides_[l] != g_.input_w))
      fail("level " + std::to_string(l) + " is " + std::to_string(H(x)) + "x" + std::to_string(W(x)) +
           ", which is not the " + std::to_string(g_.input_h) + "x" + std::to_string(g_.input_w) +
           " input divided by stride " + std::to_string(strides_[l]));
    const std::string L2 = p + ".cv2." + std::to_string(l), L3 = p + ".cv3." + std::to_string(l);
    ConvSpec last;
    last.plain = true;
    last.act = Act::None;
    // box branch: Conv3x3, Conv3x3, Conv2d 1x1 -> 4 * reg_max
    ValueRef b = conv1(L2 + ".0", x, c2, 3, Act::SiLU);
    b = conv1(L2 + ".1", b, c2, 3, Act::SiLU);
    last.c_out = 4 * reg_max;
    d.box.push_back(conv(L2 + ".2", b, last));
    // class branch
    ValueRef c;
    if (legacy) {
      c = conv1(L3 + ".0", x, c3, 3, Act::SiLU);
      c = conv1(L3 + ".1", c, c3, 3, Act::SiLU);
    } else {
      c = conv1(L3 + ".0.0", x, x.c, 3, Act::SiLU, {}, {}, x.c);  // DWConv: groups = gcd(c, c) = c
      c = conv1(L3 + ".0.1", c, c3, 1, Act::SiLU);
      c = conv1(L3 + ".1.0", c, c3, 3, Act::SiLU, {}, {}, c3);
      c = conv1(L3 + ".1.1", c, c3, 1, Act::SiLU);
    }
    last.c_out = nc;
    d.cls.push_back(conv(L3 + ".2", c, last));
    d.anchors = dim(d.anchors + 1LL * H(x) * W(x), "anchors");
  }
  g_.head.kind = HeadKind::Detect;
  g_.head.detect = d;
  g_.outputs = g_.head.inputs();
}

Graph Builder::build() {
  ctx_ = LayerCtx{-1, "header"};
  auto header_int = [&](const char* key) {
    if (!header_.contains(key) || !header_.at(key).is_number_integer())
      throw ModelError(std::string("model header: missing or non-integer '") + key + "'");
    return to_int(header_.at(key), std::string("'") + key + "'");
  };
  nc_ = header_int("nc");
  reg_max_ = header_int("reg_max");
  if (!header_.contains("strides") || !header_.at("strides").is_array() || header_.at("strides").empty())
    throw ModelError("model header: missing 'strides'");
  for (const json& s : header_.at("strides")) {
    if (!s.is_number_integer()) throw ModelError("model header: 'strides' must be positive integers");
    const int v = to_int(s, "'strides'");
    if (v < 1) throw ModelError("model header: 'strides' must be positive integers");
    strides_.push_back(v);
  }
  if (!header_.contains("layers") || !header_.at("layers").is_array() || header_.at("layers").empty())
    throw ModelError("model header: missing or empty 'layers'");
  const json& layers = header_.at("layers");
  const int max_stride = *std::max_element(strides_.begin(), strides_.end());
  if (check_input_size_ && (g_.input_h <= 0 || g_.input_w <= 0 || g_.input_h % max_stride || g_.input_w % max_stride))
    throw ModelError("input size " + std::to_string(g_.input_h) + "x" + std::to_string(g_.input_w) +
                     " is not a positive multiple of the model's largest stride " + std::to_string(max_stride));

  const int n = static_cast<int>(layers.size());
  g_.values.push_back(Value{"images", 3, g_.input_h, g_.input_w});

  // Pass 1: types, inputs and output shapes of every layer.
  std::vector<std::string> types(n);
  from_.resize(n);
  shapes_.resize(n);
  int detect_layer = -1;
  for (int i = 0; i < n; ++i) {
    const json& L = layers[i];
    ctx_ = LayerCtx{i, "?"};
    if (!L.is_object() || !L.contains("type") || !L.at("type").is_string()) fail("entry has no string 'type'");
    types[i] = L.at("type").get<std::string>();
    ctx_.type = types[i];
    if (L.contains("index") && (!L.at("index").is_number_integer() || to_int(L.at("index"), "field 'index'") != i))
      fail("field 'index' is " + L.at("index").dump() + ", expected " + std::to_string(i));
    from_[i] = parse_from(L, i);
    shapes_[i] = layer_shape(L, types[i], from_[i]);
    if (types[i] == "Detect") {
      if (i != n - 1) fail("Detect must be the last layer");
      detect_layer = i;
    }
  }
  if (detect_layer < 0) {
    ctx_ = LayerCtx{n - 1, types[n - 1]};
    fail("the last layer must be Detect");
  }

  // Pass 2: homes. A layer used by a Concat lives in the first such Concat's buffer.
  std::vector<int> parent(n, -1), parent_c0(n, 0);
  for (int j = 0; j < n; ++j) {
    if (types[j] != "Concat") continue;
    int c0 = 0;
    for (int f : from_[j]) {
      if (parent[f] < 0 && types[f] != "Detect") {
        parent[f] = j;
        parent_c0[f] = c0;
      }
      c0 += shapes_[f].c;
    }
  }
  home_.assign(n, ValueRef{});
  // Concat layers come after their inputs, so resolve from the last layer backwards.
  for (int i = n - 1; i >= 0; --i) {
    if (parent[i] >= 0 || types[i] == "Detect") continue;  // the head has no value of its own
    home_[i] = whole(new_value("model." + std::to_string(i), shapes_[i].c, shapes_[i].h, shapes_[i].w));
  }
  for (int i = n - 1; i >= 0; --i) {
    if (parent[i] < 0) continue;
    // Follow the chain of parents to a layer that owns a buffer.
    int root = i, c0 = 0;
    while (parent[root] >= 0) {
      c0 += parent_c0[root];
      root = parent[root];
    }
    home_[i] = ValueRef{home_[root].value, home_[root].c0 + c0, shapes_[i].c};
  }

  // Pass 3: expand every layer in order.
  for (int i = 0; i < n; ++i) {
    ctx_ = LayerCtx{i, types[i]};
    expand_layer(i, layers[i], types[i]);
  }
  return std::move(g_);
}

}  // namespace

Graph build_graph(const nlohmann::json& header, int input_h, int input_w) {
  return Builder(header, input_h, input_w, /*check_input_size=*/true).build();
}

std::vector<ParamSpec> required_params(const nlohmann::json& header) {
  // Any size works for the tensor list; use one large enough that no conv runs out of pixels.
  int max_stride = 32;
  if (header.contains("strides") && header.at("strides").is_array())
    for (const auto& s : header.at("strides"))
      if (s.is_number_integer() && s.get<std::int64_t>() > 0 && s.get<std::int64_t>() <= kMaxInt)
        max_stride = std::max(max_stride, s.get<int>());
  return Builder(header, 4 * max_stride, 4 * max_stride, /*check_input_size=*/false).build().params;
}

}  // namespace yolo12::graph
