// graph/modules/conv.cpp - Conv: Ultralytics Conv (conv + folded BN + activation), one ConvOp.
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

LayerShape shape(Builder& b, const Layer& l) {
  const nlohmann::json& L = l.fields;
  b.single_input(l);
  b.check_c1(l);
  const int k = b.get_int(L, "k"), s = b.get_int(L, "s"), d = b.get_int_or(L, "d", 1);
  if (k < 1 || s < 1 || d < 1) b.fail("impossible k/s/d");
  const int p = L.contains("p") && !L.at("p").is_null() ? b.get_int(L, "p") : b.dim(1LL * d * (k - 1) / 2, "padding");
  if (p < 0) b.fail("impossible p");
  const int c2 = b.get_int(L, "c2");
  b.require_positive(c2, "c2");
  ConvAttrs a;
  a.k = k, a.stride = s, a.pad = p, a.dilation = d;
  const LayerShape x = b.in_shape(l.from[0]);
  return LayerShape{c2, b.dim(a.out_size(x.h), "output height"), b.dim(a.out_size(x.w), "output width")};
}

ConvSpec parse(const Builder& b, const nlohmann::json& L) {
  ConvSpec s;
  s.c_out = b.get_int(L, "c2");
  s.k = b.get_int(L, "k");
  s.stride = b.get_int(L, "s");
  s.dilation = b.get_int_or(L, "d", 1);
  s.pad = b.get_int_or(L, "p", -1);  // -1: conv() pads by d * (k - 1) / 2 (shape rejected p < 0)
  s.groups = b.get_int_or(L, "g", 1);
  const std::string act = L.contains("act") ? b.get_str(L, "act") : std::string("silu");
  if (act == "silu")
    s.act = Act::SiLU;
  else if (act == "none")
    s.act = Act::None;
  else
    b.fail("field 'act' must be \"silu\" or \"none\", got \"" + act + "\"");
  return s;
}

void expand(Builder& b, const Layer& l) {
  b.conv(l.path(), b.input(l), parse(b, l.fields), b.output(l));
}

}  // namespace

Module conv_module() { return Module{"Conv", shape, expand}; }

}  // namespace yolo12::graph
