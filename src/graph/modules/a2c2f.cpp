// graph/modules/a2c2f.cpp - A2C2f (YOLO12's area-attention block), ABlock, AAttn.
//
// A2C2f: cv1 (1x1) to c_ channels, n stages each on the previous stage's output (two ABlocks where
// a2, else a C3k of two Bottlenecks), cv2 (1x1) on the concat of cv1 and every stage's output; where
// a2 and residual, cv2's output is scaled by the layer-scale gamma and added to the block input.
#include <cmath>
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {

void attention_tail(Builder& b, const std::string& p, AttentionOp a, const ValueRef& like, int dim, int pe_k,
                    const ValueRef& proj_residual, const ValueRef& out) {
  const int hw = b.H(like) * b.W(like);
  if (b.check_input_size() && hw % a.attrs.area != 0)
    b.fail(p + ": the " + std::to_string(b.H(like)) + "x" + std::to_string(b.W(like)) + " = " + std::to_string(hw) +
           " tokens cannot be cut into area=" + std::to_string(a.attrs.area) +
           " equal chunks; choose an input size whose feature map at this level has a token count divisible by " +
           std::to_string(a.attrs.area));
  const AttentionAttrs& at = a.attrs;
  a.out = b.temp(p + ".out", at.heads * at.dv, like);
  // The pe conv needs v as an image (channel h * dv + d). When v already is one (one head, or
  // heads packed back to back) it reads v in place; otherwise the attention op writes a copy.
  ValueRef pe_in;
  if (at.heads == 1 || at.v_head_stride == at.dv) {
    pe_in = Builder::slice(a.v, 0, at.heads * at.dv);
  } else {
    a.v_image = b.temp(p + ".v", at.heads * at.dv, like);
    pe_in = a.v_image;
  }
  b.emit(p, a);
  // x = attn_out + pe(v)  (pe: depthwise pe_k x pe_k, no activation)
  ValueRef x = b.conv1(p + ".pe", pe_in, dim, pe_k, Act::None, {}, a.out, dim);
  // proj (1x1, no activation), plus the block input where the block adds it
  b.conv1(p + ".proj", x, dim, 1, Act::None, out, proj_residual);
}

namespace {

// Ultralytics ABlock (and the turbo variant): x = x + attn(x); out = x + mlp(x).
void ablock(Builder& b, const std::string& p, const ValueRef& in, const ValueRef& out, int area, double mlp_ratio,
            const std::string& attn_kind, int pe_k) {
  const int dim = in.c;
  const int heads = dim / 32;
  if (dim % 32 != 0 || heads < 1) b.fail(p + ": ABlock width " + std::to_string(dim) + " is not a multiple of 32");
  AttentionOp a;
  a.attrs.heads = heads;
  a.attrs.dqk = a.attrs.dv = 32;
  a.attrs.area = area;
  a.attrs.scale = static_cast<float>(1.0 / std::sqrt(32.0));
  if (attn_kind == "qkv") {
    // AAttn: one conv, per head [q 32 | k 32 | v 32]
    ValueRef qkv = b.conv1(p + ".attn.qkv", in, 3 * dim, 1, Act::None);
    a.q = Builder::slice(qkv, 0, 3 * dim - 64);
    a.k = Builder::slice(qkv, 32, 3 * dim - 64);
    a.v = Builder::slice(qkv, 64, 3 * dim - 64);
    a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = 96;
  } else if (attn_kind == "qk_v") {
    // turbo: qk holds all q (channels [0, dim)) then all k ([dim, 2 dim)); v is its own conv
    ValueRef qk = b.conv1(p + ".attn.qk", in, 2 * dim, 1, Act::None);
    ValueRef v = b.conv1(p + ".attn.v", in, dim, 1, Act::None);
    a.q = Builder::slice(qk, 0, dim);
    a.k = Builder::slice(qk, dim, dim);
    a.v = v;
    a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = 32;
  } else {
    b.fail("field 'attn' must be \"qkv\" or \"qk_v\", got \"" + attn_kind + "\"");
  }
  ValueRef x1 = b.temp(p + ".x1", dim, in);
  attention_tail(b, p + ".attn", a, in, dim, pe_k, in, x1);
  const int hidden = b.scaled(dim, mlp_ratio, "mlp hidden channels");
  b.require_positive(hidden, "mlp hidden channels");
  ValueRef h = b.conv1(p + ".mlp.0", x1, hidden, 1, Act::SiLU);
  b.conv1(p + ".mlp.1", h, dim, 1, Act::None, out, x1);
}

struct A2C2fArgs {
  int n = 0;
  bool a2 = false;  // ABlocks (else C3k blocks)
  int area = 1;     // a2 only
  bool residual = false;
  double mlp_ratio = 2.0;
  double e = 0.5;
  int g = 1;
  bool shortcut = false;
  std::string attn = "qkv";  // a2 only: "qkv" (AAttn) or "qk_v" (turbo)
  int pe_k = 7;              // a2 only
};

A2C2fArgs parse(const Builder& b, const nlohmann::json& L) {
  A2C2fArgs a;
  a.n = b.get_int(L, "n");
  a.a2 = b.get_bool(L, "a2");
  a.area = a.a2 ? b.get_int(L, "area") : 1;  // unused (and often -1) without attention
  a.residual = b.get_bool(L, "residual");
  a.mlp_ratio = b.get_num(L, "mlp_ratio");
  a.e = b.get_num(L, "e");
  a.g = b.get_int_or(L, "g", 1);
  a.shortcut = b.get_bool(L, "shortcut");
  a.attn = a.a2 ? b.get_str(L, "attn") : std::string("qkv");
  a.pe_k = a.a2 ? b.get_int(L, "pe_k") : 7;
  if (a.n < 0 || a.n > kMaxRepeats)
    b.fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(a.n));
  if (a.area < 1) b.fail("area must be >= 1, got " + std::to_string(a.area));
  if (a.pe_k < 1 || a.pe_k % 2 == 0) b.fail("pe_k must be odd, got " + std::to_string(a.pe_k));
  return a;
}

void expand(Builder& b, const Layer& l) {
  const A2C2fArgs a = parse(b, l.fields);
  const std::string p = l.path();
  const ValueRef in = b.input(l), out = b.output(l);
  const int c_ = b.scaled(out.c, a.e, "hidden channels");
  b.require_positive(c_, "hidden channels int(c2 * e)");
  if (a.a2 && c_ % 32 != 0) b.fail("hidden channels " + std::to_string(c_) + " are not a multiple of 32");
  ValueRef cat = b.temp(p + ".cat", b.dim((1LL + a.n) * c_, "concat channels (1 + n) * c"), in);
  b.conv1(p + ".cv1", in, c_, 1, Act::SiLU, Builder::slice(cat, 0, c_));
  for (int j = 0; j < a.n; ++j) {
    const std::string mp = p + ".m." + std::to_string(j);
    ValueRef src = Builder::slice(cat, j * c_, c_), dst = Builder::slice(cat, (j + 1) * c_, c_);
    if (a.a2) {
      ValueRef mid = b.temp(mp + ".0.out", c_, in);
      ablock(b, mp + ".0", src, mid, a.area, a.mlp_ratio, a.attn, a.pe_k);
      ablock(b, mp + ".1", mid, dst, a.area, a.mlp_ratio, a.attn, a.pe_k);
    } else {
      c3k(b, mp, src, dst, 2, a.shortcut, a.g);
    }
  }
  ConvSpec s;
  s.c_out = out.c;
  if (a.a2 && a.residual) {
    if (in.c != out.c) b.fail("a residual A2C2f needs c1 == c2");
    s.gamma = p + ".gamma";
    s.residual = in;
  }
  // The gamma tensor is listed right after cv2's weight and bias (first use).
  b.conv(p + ".cv2", cat, s, out);
  if (!s.gamma.empty()) b.add_param(s.gamma, {out.c});
}

LayerShape shape(Builder& b, const Layer& l) { return b.block_shape(l); }

}  // namespace

Module a2c2f_module() { return Module{"A2C2f", shape, expand}; }

}  // namespace yolo12::graph
