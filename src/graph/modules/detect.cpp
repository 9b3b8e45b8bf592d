// graph/modules/detect.cpp - Detect: the detection head. Per level l, a box branch (Conv 3x3, Conv
// 3x3, Conv2d 1x1 -> 4 * reg_max) and a class branch (legacy: Conv 3x3, Conv 3x3; else DWConv 3x3,
// Conv 1x1, DWConv 3x3, Conv 1x1; then Conv2d 1x1 -> nc). The branch outputs are the graph's
// outputs; the head (HeadSpec) decodes them.
#include <string>

#include "graph/modules/module.hpp"

namespace yolo12::graph {
namespace {

struct DetectArgs {
  int nc = 80, reg_max = 16;
  bool legacy = false;  // YOLOv8's class branch
  int c2 = 0, c3 = 0;   // box and class branch widths
  const nlohmann::json* ch = nullptr;  // the input channels, one per level (checked per level)
};

DetectArgs parse(const Builder& b, const Layer& l) {
  const nlohmann::json& L = l.fields;
  DetectArgs a;
  a.nc = b.get_int(L, "nc");
  a.reg_max = b.get_int(L, "reg_max");
  a.legacy = b.get_bool(L, "legacy");
  a.c2 = b.get_int(L, "c2"), a.c3 = b.get_int(L, "c3");
  b.require_positive(a.reg_max, "reg_max");
  b.require_positive(a.c2, "c2");
  b.require_positive(a.c3, "c3");
  const nlohmann::json& ch = b.field(L, "ch");
  if (!ch.is_array() || ch.size() != l.from.size())
    b.fail("field 'ch' must list the channels of each of the " + std::to_string(l.from.size()) + " inputs");
  if (b.strides().size() != l.from.size())
    b.fail("the header has " + std::to_string(b.strides().size()) + " strides for " + std::to_string(l.from.size()) +
           " detection levels");
  if (a.nc != b.nc()) b.fail("nc " + std::to_string(a.nc) + " differs from the header's nc " + std::to_string(b.nc()));
  if (a.reg_max != b.reg_max()) b.fail("reg_max differs from the header's reg_max");
  a.ch = &ch;
  return a;
}

void expand(Builder& b, const Layer& l) {
  const DetectArgs a = parse(b, l);
  const std::string p = l.path();
  const std::vector<int>& strides = b.strides();
  HeadSpec head;
  head.kind = HeadKind::Detect;
  DetectHead& d = head.detect;
  d.attrs = DetectAttrs{a.nc, a.reg_max};
  d.strides = strides;
  for (std::size_t k = 0; k < l.from.size(); ++k) {
    if (l.from[k] == -1) b.fail("level " + std::to_string(k) + " reads the input image; Detect reads feature maps");
    const ValueRef x = b.input(l, k);
    const nlohmann::json& ch = (*a.ch)[k];
    if (!ch.is_number() || b.to_int(ch, "ch[" + std::to_string(k) + "]") != x.c)
      b.fail("ch[" + std::to_string(k) + "] is " + ch.dump() + " but layer " + std::to_string(l.from[k]) +
             " gives " + std::to_string(x.c) + " channels");
    if (b.check_input_size() &&
        (1LL * b.H(x) * strides[k] != b.input_h() || 1LL * b.W(x) * strides[k] != b.input_w()))
      b.fail("level " + std::to_string(k) + " is " + std::to_string(b.H(x)) + "x" + std::to_string(b.W(x)) +
             ", which is not the " + std::to_string(b.input_h()) + "x" + std::to_string(b.input_w()) +
             " input divided by stride " + std::to_string(strides[k]));
    const std::string L2 = p + ".cv2." + std::to_string(k), L3 = p + ".cv3." + std::to_string(k);
    ConvSpec last;
    last.plain = true;
    last.act = Act::None;
    // box branch: Conv3x3, Conv3x3, Conv2d 1x1 -> 4 * reg_max
    ValueRef box = b.conv1(L2 + ".0", x, a.c2, 3, Act::SiLU);
    box = b.conv1(L2 + ".1", box, a.c2, 3, Act::SiLU);
    last.c_out = 4 * a.reg_max;
    d.box.push_back(b.conv(L2 + ".2", box, last));
    // class branch
    ValueRef c;
    if (a.legacy) {
      c = b.conv1(L3 + ".0", x, a.c3, 3, Act::SiLU);
      c = b.conv1(L3 + ".1", c, a.c3, 3, Act::SiLU);
    } else {
      c = b.conv1(L3 + ".0.0", x, x.c, 3, Act::SiLU, {}, {}, x.c);  // DWConv: groups = gcd(c, c) = c
      c = b.conv1(L3 + ".0.1", c, a.c3, 1, Act::SiLU);
      c = b.conv1(L3 + ".1.0", c, a.c3, 3, Act::SiLU, {}, {}, a.c3);
      c = b.conv1(L3 + ".1.1", c, a.c3, 1, Act::SiLU);
    }
    last.c_out = a.nc;
    d.cls.push_back(b.conv(L3 + ".2", c, last));
    d.anchors = b.dim(d.anchors + 1LL * b.H(x) * b.W(x), "anchors");
  }
  b.set_head(head);
}

LayerShape shape(Builder& b, const Layer& l) {
  const int nc = b.get_int(l.fields, "nc");
  b.require_positive(nc, "nc");
  long long a = 0;
  for (int f : l.from) a += 1LL * b.in_shape(f).h * b.in_shape(f).w;
  return LayerShape{4 + nc, 1, b.dim(a, "anchors")};
}

}  // namespace

Module detect_module() { return Module{"Detect", shape, expand, /*head=*/true}; }

}  // namespace yolo12::graph
