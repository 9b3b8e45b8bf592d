// graph/modules/sppf.cpp - SPPF: cv1 (1x1, c1 -> c1 / 2), three chained k x k max-pools (stride 1,
// same size), cv2 (1x1) on the concat of cv1 and the three pools.
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

struct SppfArgs {
  int k = 5;       // odd
  int hidden = 0;  // c1 / 2
  Act cv1_act = Act::SiLU;
};

SppfArgs parse(const Builder& b, const nlohmann::json& L, int c1) {
  SppfArgs a;
  a.k = b.get_int(L, "k");
  if (a.k < 1 || a.k % 2 == 0) b.fail("k must be odd, got " + std::to_string(a.k));
  a.hidden = c1 / 2;
  b.require_positive(a.hidden, "hidden channels c1 / 2");
  // cv1 has SiLU in YOLOv8 / YOLO11 (Ultralytics' legacy SPPF row); "cv1_act" may say otherwise.
  const std::string act1 = L.contains("cv1_act") ? b.get_str(L, "cv1_act") : std::string("silu");
  if (act1 != "silu" && act1 != "none") b.fail("field 'cv1_act' must be \"silu\" or \"none\"");
  a.cv1_act = act1 == "silu" ? Act::SiLU : Act::None;
  return a;
}

void expand(Builder& b, const Layer& l) {
  const std::string p = l.path();
  const ValueRef in = b.input(l), out = b.output(l);
  const SppfArgs a = parse(b, l.fields, in.c);
  const int c_ = a.hidden;
  ValueRef cat = b.temp(p + ".cat", 4 * c_, in);
  b.conv1(p + ".cv1", in, c_, 1, a.cv1_act, Builder::slice(cat, 0, c_));
  for (int j = 0; j < 3; ++j)
    b.emit(p + ".m", MaxPoolOp{MaxPoolAttrs{a.k}, Builder::slice(cat, j * c_, c_), Builder::slice(cat, (j + 1) * c_, c_)});
  b.conv1(p + ".cv2", cat, out.c, 1, Act::SiLU, out);
}

LayerShape shape(Builder& b, const Layer& l) { return b.block_shape(l); }

}  // namespace

Module sppf_module() { return Module{"SPPF", shape, expand}; }

}  // namespace yolo12::graph
