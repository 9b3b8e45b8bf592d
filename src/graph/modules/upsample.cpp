// graph/modules/upsample.cpp - Upsample: nearest-neighbour by an integer scale, one UpsampleOp.
#include <cmath>
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

// The integer scale factor.
int parse_factor(const Builder& b, const nlohmann::json& L) {
  const double sc = b.get_num(L, "scale");
  if (!(sc >= 1.0 && sc <= static_cast<double>(kMaxInt)) || std::floor(sc) != sc)
    b.fail("scale must be a positive integer, got " + b.field(L, "scale").dump());
  return static_cast<int>(sc);
}

LayerShape shape(Builder& b, const Layer& l) {
  const nlohmann::json& L = l.fields;
  b.single_input(l);
  const int f = parse_factor(b, L);
  if (L.contains("mode") && b.get_str(L, "mode") != "nearest")
    b.fail("only mode \"nearest\" is supported, got \"" + b.get_str(L, "mode") + "\"");
  const LayerShape x = b.in_shape(l.from[0]);
  return LayerShape{x.c, b.dim(1LL * x.h * f, "output height"), b.dim(1LL * x.w * f, "output width")};
}

void expand(Builder& b, const Layer& l) {
  b.emit(l.path(), UpsampleOp{UpsampleAttrs{parse_factor(b, l.fields)}, b.input(l), b.output(l)});
}

}  // namespace

Module upsample_module() { return Module{"Upsample", shape, expand}; }

}  // namespace yolo12::graph
