// graph/modules/concat.cpp - Concat along channels. It costs nothing: it hosts its inputs (each
// producer writes straight into its slice of the Concat's buffer); an input that already lives in
// another Concat's buffer is copied in.
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

LayerShape shape(Builder& b, const Layer& l) {
  if (b.get_int_or(l.fields, "dim", 1) != 1) b.fail("only dim 1 (channels) is supported");
  const LayerShape x = b.in_shape(l.from[0]);
  LayerShape s{0, x.h, x.w};
  long long c = 0;
  for (int f : l.from) {
    if (f == -1) b.fail("cannot concatenate the input image");
    const LayerShape y = b.in_shape(f);
    if (b.check_input_size() && (y.h != x.h || y.w != x.w))
      b.fail("inputs have different sizes: layer " + std::to_string(l.from[0]) + " is " + std::to_string(x.h) +
             "x" + std::to_string(x.w) + ", layer " + std::to_string(f) + " is " + std::to_string(y.h) + "x" +
             std::to_string(y.w) + " (the input size must be a multiple of the largest stride)");
    c += y.c;
  }
  s.c = b.dim(c, "output channels");
  return s;
}

void expand(Builder& b, const Layer& l) {
  // Producers already wrote into their slices; copy the inputs that live elsewhere.
  const ValueRef out = b.output(l);
  int c0 = 0;
  for (std::size_t k = 0; k < l.from.size(); ++k) {
    const int c = b.in_shape(l.from[k]).c;
    const ValueRef dst = Builder::slice(out, c0, c);
    const ValueRef src = b.input(l, k);
    if (src.value != dst.value || src.c0 != dst.c0) b.copy(l.path() + " <- model." + std::to_string(l.from[k]), src, dst);
    c0 += c;
  }
}

}  // namespace

Module concat_module() { return Module{"Concat", shape, expand, /*head=*/false, /*hosts_inputs=*/true}; }

}  // namespace yolo12::graph
