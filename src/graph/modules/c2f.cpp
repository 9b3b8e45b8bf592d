// graph/modules/c2f.cpp - C2f and C3k2, and their sub-blocks C3k and Bottleneck.
//
// C2f / C3k2: cv1 (1x1) to 2c channels split in two halves, n blocks each on the previous block's
// output, cv2 (1x1) on the concat of both halves and every block output. C2f's blocks are
// Bottlenecks (e 1.0); C3k2's are Bottlenecks (e 0.5) or, where c3k, C3ks of two Bottlenecks.
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {

namespace {

// Ultralytics Bottleneck(c1, c2, shortcut, g, k=(k1, k2), e): cv1 (k1) then cv2 (k2, groups g),
// plus the input when shortcut and c1 == c2.
void bottleneck(Builder& b, const std::string& p, const ValueRef& in, const ValueRef& out, bool shortcut, int g,
                int k1, int k2, double e) {
  const int c_ = static_cast<int>(out.c * e);
  ValueRef h = b.conv1(p + ".cv1", in, c_, k1, Act::SiLU);
  const bool add = shortcut && in.c == out.c;
  b.conv1(p + ".cv2", h, out.c, k2, Act::SiLU, out, add ? in : ValueRef{}, g);
}

struct C2fArgs {
  int n = 0;
  double e = 0.5;
  int g = 1;
  bool shortcut = false;
  bool c3k = false;  // C3k2 only: C3k blocks instead of Bottlenecks
};

C2fArgs parse(const Builder& b, const nlohmann::json& L, bool is_c3k2) {
  C2fArgs a;
  a.n = b.get_int(L, "n");
  a.e = b.get_num(L, "e");
  a.g = b.get_int_or(L, "g", 1);
  a.shortcut = b.get_bool(L, "shortcut");
  a.c3k = is_c3k2 ? b.get_bool(L, "c3k") : false;
  if (a.n < 0 || a.n > kMaxRepeats)
    b.fail("n must be in 0.." + std::to_string(kMaxRepeats) + ", got " + std::to_string(a.n));
  return a;
}

void expand_c2f_like(Builder& b, const Layer& l, bool is_c3k2) {
  const C2fArgs a = parse(b, l.fields, is_c3k2);
  const std::string p = l.path();
  const ValueRef in = b.input(l), out = b.output(l);
  const int c = b.scaled(out.c, a.e, "hidden channels");
  b.require_positive(c, "hidden channels int(c2 * e)");
  ValueRef cat = b.temp(p + ".cat", b.dim((2LL + a.n) * c, "concat channels (2 + n) * c"), in);
  b.conv1(p + ".cv1", in, 2 * c, 1, Act::SiLU, Builder::slice(cat, 0, 2 * c));
  for (int i = 0; i < a.n; ++i) {
    const std::string mp = p + ".m." + std::to_string(i);
    ValueRef src = Builder::slice(cat, (1 + i) * c, c), dst = Builder::slice(cat, (2 + i) * c, c);
    if (a.c3k)
      c3k(b, mp, src, dst, 2, a.shortcut, a.g);
    else
      bottleneck(b, mp, src, dst, a.shortcut, a.g, 3, 3, is_c3k2 ? 0.5 : 1.0);
  }
  b.conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
}

LayerShape shape(Builder& b, const Layer& l) { return b.block_shape(l); }
void expand_c2f(Builder& b, const Layer& l) { expand_c2f_like(b, l, false); }
void expand_c3k2(Builder& b, const Layer& l) { expand_c2f_like(b, l, true); }

}  // namespace

// Ultralytics C3k(c1, c2, n, shortcut, g, e=0.5, k=3): cv3(cat(m(cv1(x)), cv2(x))).
void c3k(Builder& b, const std::string& p, const ValueRef& in, const ValueRef& out, int n, bool shortcut, int g) {
  const int c_ = static_cast<int>(out.c * 0.5);
  b.require_positive(c_, (p + " hidden channels").c_str());
  ValueRef cat = b.temp(p + ".cat", 2 * c_, in);
  ValueRef x = b.conv1(p + ".cv1", in, c_, 1, Act::SiLU);
  for (int i = 0; i < n; ++i) {
    ValueRef dst = i == n - 1 ? Builder::slice(cat, 0, c_) : b.temp(p + ".m." + std::to_string(i), c_, in);
    bottleneck(b, p + ".m." + std::to_string(i), x, dst, shortcut, g, 3, 3, 1.0);
    x = dst;
  }
  if (n == 0) b.copy(p + ".m", x, Builder::slice(cat, 0, c_));
  b.conv1(p + ".cv2", in, c_, 1, Act::SiLU, Builder::slice(cat, c_, c_));
  b.conv1(p + ".cv3", cat, out.c, 1, Act::SiLU, out);
}

Module c2f_module() { return Module{"C2f", shape, expand_c2f}; }
Module c3k2_module() { return Module{"C3k2", shape, expand_c3k2}; }

}  // namespace yolo12::graph
