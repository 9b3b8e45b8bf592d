// graph/modules/c2psa.cpp - C2PSA and its PSABlock (YOLO11's attention block).
//
// C2PSA: cv1 (1x1) to 2c channels split as [a | b]; b runs through n PSABlocks; cv2 (1x1) on
// [a | the last block's output]. c1 == c2.
#include <algorithm>
#include <cmath>
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

// Ultralytics PSABlock(c, attn_ratio 0.5, heads, shortcut=True).
void psablock(Builder& b, const std::string& p, const ValueRef& in, const ValueRef& out, int heads) {
  const int dim = in.c;
  if (heads < 1 || dim % heads != 0)
    b.fail(p + ": width " + std::to_string(dim) + " is not divisible by " + std::to_string(heads) + " heads");
  const int head_dim = dim / heads;
  const int key_dim = static_cast<int>(head_dim * 0.5);
  if (key_dim < 1) b.fail(p + ": key_dim is 0 (head_dim " + std::to_string(head_dim) + ")");
  const int stride = 2 * key_dim + head_dim;
  ValueRef qkv = b.conv1(p + ".attn.qkv", in, dim + 2 * key_dim * heads, 1, Act::None);
  AttentionOp a;
  a.attrs.heads = heads;
  a.attrs.dqk = key_dim;
  a.attrs.dv = head_dim;
  a.q = Builder::slice(qkv, 0, qkv.c - key_dim - head_dim);
  a.k = Builder::slice(qkv, key_dim, qkv.c - key_dim - head_dim);
  a.v = Builder::slice(qkv, 2 * key_dim, qkv.c - 2 * key_dim);
  a.attrs.q_head_stride = a.attrs.k_head_stride = a.attrs.v_head_stride = stride;
  a.attrs.area = 1;
  a.attrs.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(key_dim)));
  ValueRef x1 = b.temp(p + ".x1", dim, in);
  attention_tail(b, p + ".attn", a, in, dim, 3, in, x1);
  ValueRef h = b.conv1(p + ".ffn.0", x1, 2 * dim, 1, Act::SiLU);
  b.conv1(p + ".ffn.1", h, dim, 1, Act::None, out, x1);
}

struct C2psaArgs {
  int n = 0;
  int hidden = 0;  // c = int(c1 * e)
  int heads = 1;   // max(c / 64, 1)
};

C2psaArgs parse(const Builder& b, const nlohmann::json& L, int c1) {
  C2psaArgs a;
  a.n = b.get_int(L, "n");
  const double e = b.get_num(L, "e");
  if (a.n < 0 || a.n > kMaxRepeats)
    b.fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(a.n));
  a.hidden = b.scaled(c1, e, "hidden channels");
  b.require_positive(a.hidden, "hidden channels int(c1 * e)");
  b.dim(2LL * a.hidden, "hidden channels 2 * int(c1 * e)");
  a.heads = std::max(a.hidden / 64, 1);
  return a;
}

void expand(Builder& b, const Layer& l) {
  const std::string p = l.path();
  const ValueRef in = b.input(l), out = b.output(l);
  const C2psaArgs a = parse(b, l.fields, in.c);
  const int c = a.hidden;
  ValueRef cat = b.temp(p + ".cat", 2 * c, in);
  b.conv1(p + ".cv1", in, 2 * c, 1, Act::SiLU, Builder::slice(cat, 0, 2 * c));
  // b = cat[c, 2c) runs through the blocks; the last block writes back over b (b is no longer
  // read by then: its last op reads only the block's own temporaries).
  ValueRef x = Builder::slice(cat, c, c);
  for (int j = 0; j < a.n; ++j) {
    const std::string mp = p + ".m." + std::to_string(j);
    ValueRef dst = j == a.n - 1 ? Builder::slice(cat, c, c) : b.temp(mp + ".out", c, in);
    psablock(b, mp, x, dst, a.heads);
    x = dst;
  }
  b.conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
}

LayerShape shape(Builder& b, const Layer& l) {
  const LayerShape s = b.block_shape(l);
  if (s.c != b.in_shape(l.from[0]).c) b.fail("C2PSA needs c1 == c2");
  return s;
}

}  // namespace

Module c2psa_module() { return Module{"C2PSA", shape, expand}; }

}  // namespace yolo12::graph
