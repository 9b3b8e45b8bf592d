// tests/unit/test_pad_channels.cpp - graph::pad_channels (src/graph/pad_channels.hpp), the CUDA backend's
// pass that widens conv-to-conv values to a multiple of 8 channels: which values it widens on built graphs
// (the A2C2f MLP's int(c * 1.2), a layer feeding the legacy Detect) and on a hand-made graph holding every
// case it must leave alone (a concat buffer, a residual, the head's maps, depthwise and grouped readers,
// sliced reads, other op kinds, the input), that the widened ops' attributes, refs and stored dims agree
// with each other and with the tensor list, and that a graph with nothing to widen stays byte for byte.
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "graph/graph.hpp"
#include "graph/pad_channels.hpp"
#include "tiny_header.hpp"

using yolo12::test::tiny_header;

using nlohmann::json;
using yolo12::graph::ConvOp;
using yolo12::graph::Graph;
using yolo12::graph::Op;
using yolo12::graph::ValueRef;

namespace {

std::string ref_str(const ValueRef& r) {
  return std::to_string(r.value) + "[" + std::to_string(r.c0) + "+" + std::to_string(r.c) + "]";
}

// Every field of the graph as text: two graphs with the same dump are the same graph.
std::string dump_op(const Op& op) {
  std::ostringstream s;
  s << op.name << " " << yolo12::graph::op_kind_name(op.kind()) << ":";
  yolo12::graph::visit_op(op, [&](const auto& o) {
    using O = std::decay_t<decltype(o)>;
    if constexpr (std::is_same_v<O, ConvOp>) {
      const auto& a = o.attrs;
      s << " " << a.c_in << " " << a.c_out << " k" << a.k << " s" << a.stride << " p" << a.pad << " g" << a.groups
        << " d" << a.dilation << " act" << static_cast<int>(a.act) << " w " << o.weight << " b " << o.bias << " gamma "
        << o.gamma << " stored " << o.weight_c_out << " " << o.weight_c_in;
    } else if constexpr (std::is_same_v<O, yolo12::graph::UpsampleOp>) {
      s << " x" << o.attrs.factor;
    } else if constexpr (std::is_same_v<O, yolo12::graph::MaxPoolOp>) {
      s << " k" << o.attrs.k;
    } else if constexpr (std::is_same_v<O, yolo12::graph::AttentionOp>) {
      const auto& a = o.attrs;
      s << " h" << a.heads << " " << a.dqk << " " << a.dv << " " << a.q_head_stride << " " << a.k_head_stride << " "
        << a.v_head_stride << " area" << a.area << " scale" << a.scale;
    }
    s << " reads";
    for (const ValueRef& r : o.reads()) s << " " << ref_str(r);
    s << " writes";
    for (const ValueRef& r : o.writes()) s << " " << ref_str(r);
  });
  return s.str();
}

std::string dump(const Graph& g) {
  std::ostringstream s;
  s << "input " << g.input_h << "x" << g.input_w << "\n";
  for (const auto& v : g.values) s << "value " << v.name << " " << v.c << " " << v.h << " " << v.w << "\n";
  for (const Op& op : g.ops) s << dump_op(op) << "\n";
  s << "outputs";
  for (const ValueRef& r : g.outputs) s << " " << ref_str(r);
  const auto& d = g.head.detect;
  s << "\nhead " << static_cast<int>(g.head.kind) << " nc" << d.attrs.nc << " reg_max" << d.attrs.reg_max << " anchors"
    << d.anchors << " strides";
  for (int st : d.strides) s << " " << st;
  for (const ValueRef& r : d.box) s << " box " << ref_str(r);
  for (const ValueRef& r : d.cls) s << " cls " << ref_str(r);
  s << "\n";
  for (const auto& p : g.params) {
    s << "param " << p.name;
    for (long long x : p.shape) s << " " << x;
    s << "\n";
  }
  return s.str();
}

const ConvOp& conv_named(const Graph& g, const std::string& name) {
  const auto it = std::find_if(g.ops.begin(), g.ops.end(), [&](const Op& op) { return op.name == name; });
  INFO("op " << name);
  REQUIRE(it != g.ops.end());
  return it->get<ConvOp>();
}

int value_named(const Graph& g, const std::string& name) {
  const auto it = std::find_if(g.values.begin(), g.values.end(), [&](const auto& v) { return v.name == name; });
  INFO("value " << name);
  REQUIRE(it != g.values.end());
  return static_cast<int>(it - g.values.begin());
}

// What must hold of any graph, widened or not: refs inside their values, every conv's attrs equal to its
// refs' channels, and (where the graph has its tensor list) its tensors shaped by the stored dims.
void check_consistent(const Graph& g) {
  std::set<std::string> checked;
  for (const Op& op : g.ops) {
    INFO(dump_op(op));
    yolo12::graph::visit_op(op, [&](const auto& o) {
      std::vector<ValueRef> refs = o.reads();
      for (const ValueRef& w : o.writes()) refs.push_back(w);
      for (const ValueRef& r : refs)
        if (r.valid()) REQUIRE(r.c0 + r.c <= g.values[static_cast<std::size_t>(r.value)].c);
    });
    const ConvOp* c = op.get_if<ConvOp>();
    if (!c) continue;
    REQUIRE(c->in.c == c->attrs.c_in);
    REQUIRE(c->out.c == c->attrs.c_out);
    if (c->residual.valid()) REQUIRE(c->residual.c == c->attrs.c_out);
    REQUIRE(c->tensor_c_out() <= c->attrs.c_out);
    REQUIRE(c->tensor_c_in() <= c->attrs.c_in);
    REQUIRE((c->weight_c_out == 0 || c->weight_c_out < c->attrs.c_out));  // recorded only where widened
    REQUIRE((c->weight_c_in == 0 || c->weight_c_in < c->attrs.c_in));
    if (c->widened()) REQUIRE(c->attrs.groups == 1);
    for (const auto& p : g.params) {
      const std::vector<long long> out{c->tensor_c_out()};
      if (p.name == c->weight) {
        REQUIRE(p.shape == std::vector<long long>{c->tensor_c_out(), c->tensor_c_in() / c->attrs.groups, c->attrs.k,
                                                  c->attrs.k});
        checked.insert(p.name);
      }
      if (p.name == c->bias || p.name == c->gamma) {
        REQUIRE(p.shape == out);
        checked.insert(p.name);
      }
    }
  }
  if (!g.params.empty()) REQUIRE(checked.size() == g.params.size());  // every tensor is a conv's here
}


// YOLO12l's A2C2f at narrow width (the yolo12l_narrow_rand fixture's backbone blocks): c 64, two heads,
// layer-scale residual, mlp_ratio 1.2, so each ABlock's MLP is 64 -> int(64 * 1.2) = 76 -> 64.
const json kA2C2fL = {{"type", "A2C2f"}, {"c1", 64}, {"c2", 64}, {"n", 1}, {"a2", true}, {"area", 2},
                      {"residual", true}, {"mlp_ratio", 1.2}, {"e", 1.0}, {"g", 1}, {"shortcut", true},
                      {"attn", "qkv"}, {"pe_k", 7}};

// A model of every module type with aligned channels everywhere (the mlp_ratio 2.0 of yolo12n..m).
json aligned_model() {
  json h;
  h["nc"] = 80;
  h["reg_max"] = 16;
  h["strides"] = {8, 16, 32};
  h["layers"] = json::parse(R"([
{"index":0,"type":"Conv","from":[-1],"c1":3,"c2":16,"k":3,"s":4,"p":1,"g":1,"d":1,"act":"silu"},
{"index":1,"type":"Conv","from":[0],"c1":16,"c2":32,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":2,"type":"C3k2","from":[1],"c1":32,"c2":32,"n":1,"c3k":true,"e":0.5,"g":1,"shortcut":true},
{"index":3,"type":"Conv","from":[2],"c1":32,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":4,"type":"A2C2f","from":[3],"c1":64,"c2":64,"n":1,"a2":true,"area":1,"residual":true,"mlp_ratio":2.0,"e":1.0,"g":1,"shortcut":true,"attn":"qkv","pe_k":7},
{"index":5,"type":"SPPF","from":[4],"c1":64,"c2":64,"k":5},
{"index":6,"type":"C2PSA","from":[5],"c1":64,"c2":64,"n":1,"e":0.5},
{"index":7,"type":"Upsample","from":[6],"scale":2,"mode":"nearest"},
{"index":8,"type":"Concat","from":[7,2],"dim":1},
{"index":9,"type":"C2f","from":[8],"c1":96,"c2":32,"n":1,"shortcut":false,"g":1,"e":0.5},
{"index":10,"type":"Conv","from":[6],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":11,"type":"Detect","from":[9,6,10],"nc":80,"reg_max":16,"ch":[32,64,64],"legacy":false,"c2":64,"c3":80}
])");
  return h;
}

// A hand-made graph (8 x 8 maps): values and ops as a test wants them, no tensor list.
struct HandGraph {
  Graph g;
  HandGraph() { value("input", 3); }
  int value(const std::string& name, int c) {
    g.values.push_back({name, c, 8, 8});
    return static_cast<int>(g.values.size()) - 1;
  }
  static ValueRef whole(const Graph& g, int v) { return ValueRef{v, 0, g.values[static_cast<std::size_t>(v)].c}; }
  ValueRef whole(int v) const { return whole(g, v); }
  void conv(const std::string& name, const ValueRef& in, const ValueRef& out, int groups = 1,
            const ValueRef& residual = {}) {
    ConvOp c;
    c.attrs = yolo12::graph::ConvAttrs{in.c, out.c, 1, 1, 0, groups, 1, yolo12::graph::Act::SiLU};
    c.in = in;
    c.out = out;
    c.residual = residual;
    c.weight = name + ".weight";
    c.bias = name + ".bias";
    g.ops.push_back(Op{name, c});
  }
  template <typename O>
  void other(const std::string& name, O o) { g.ops.push_back(Op{name, o}); }
};

}  // namespace

TEST_CASE("pad_channels widens the A2C2f MLP's hidden values, int(c * 1.2), and nothing else", "[graph][pad]") {
  const Graph before = yolo12::graph::build_graph(tiny_header(kA2C2fL), 64, 96);
  Graph g = before;
  const std::vector<int> widened = yolo12::graph::pad_channels(g);
  const int h0 = value_named(g, "model.5.m.0.0.mlp.0"), h1 = value_named(g, "model.5.m.0.1.mlp.0");
  REQUIRE(widened == std::vector<int>{h0, h1});
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    INFO("value " << g.values[v].name);
    const bool hidden = static_cast<int>(v) == h0 || static_cast<int>(v) == h1;
    CHECK(before.values[v].c == (hidden ? 76 : g.values[v].c));
    CHECK(g.values[v].c == (hidden ? 80 : before.values[v].c));
  }
  for (const char* block : {"model.5.m.0.0", "model.5.m.0.1"}) {
    const std::string p = block;
    const ConvOp& up = conv_named(g, p + ".mlp.0");  // 64 -> 76(+4), SiLU
    CHECK(up.attrs.c_in == 64);
    CHECK(up.attrs.c_out == 80);
    CHECK(up.out.c == 80);
    CHECK(up.weight_c_out == 76);
    CHECK(up.weight_c_in == 0);
    CHECK(up.tensor_c_out() == 76);
    CHECK(up.tensor_c_in() == 64);
    const ConvOp& down = conv_named(g, p + ".mlp.1");  // 76(+4) -> 64 + x1
    CHECK(down.attrs.c_in == 80);
    CHECK(down.in.c == 80);
    CHECK(down.attrs.c_out == 64);
    CHECK(down.weight_c_in == 76);
    CHECK(down.weight_c_out == 0);
    CHECK(down.tensor_c_in() == 76);
    CHECK(down.residual.valid());  // its own residual is another value: no obstacle
  }
  // Only those four ops changed; the tensor list (the stored shapes), outputs and head are as built.
  REQUIRE(g.ops.size() == before.ops.size());
  int changed = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    if (dump_op(g.ops[i]) != dump_op(before.ops[i])) {
      ++changed;
      CHECK(g.ops[i].name.find(".mlp.") != std::string::npos);
    }
  CHECK(changed == 4);
  Graph unpadded = g;  // dump() without the values and ops equals
  unpadded.values = before.values;
  unpadded.ops = before.ops;
  CHECK(dump(unpadded) == dump(before));
  check_consistent(before);
  check_consistent(g);
  // Idempotent: a widened graph has nothing left to widen.
  Graph again = g;
  CHECK(yolo12::graph::pad_channels(again).empty());
  CHECK(dump(again) == dump(g));
  // Deterministic across input sizes (weights packed from one size fit every other).
  Graph other = yolo12::graph::build_graph(tiny_header(kA2C2fL), 128, 64);
  CHECK(yolo12::graph::pad_channels(other) == widened);
}

TEST_CASE("pad_channels widens a layer feeding the legacy Detect, not the one whose reader is depthwise", "[graph][pad]") {
  // Layer 5, a 1x1 conv to 60 channels, is read by Detect's convs of level 3. Legacy: two 3x3 convs
  // (groups 1) read it: widened to 64. Otherwise the class branch starts with a depthwise 3x3: unchanged.
  const json conv60 = {{"type", "Conv"}, {"c1", 64}, {"c2", 60}, {"k", 1}, {"s", 1}, {"p", 0}, {"g", 1}, {"d", 1}, {"act", "silu"}};
  for (const bool legacy : {true, false}) {
    INFO((legacy ? "legacy" : "DWConv class branch"));
    const Graph before = yolo12::graph::build_graph(tiny_header(conv60, legacy), 64, 96);
    Graph g = before;
    const std::vector<int> widened = yolo12::graph::pad_channels(g);
    const int v5 = value_named(g, "model.5");
    check_consistent(g);
    if (!legacy) {
      CHECK(widened.empty());
      CHECK(dump(g) == dump(before));
      continue;
    }
    REQUIRE(widened == std::vector<int>{v5});
    CHECK(g.values[static_cast<std::size_t>(v5)].c == 64);
    CHECK(conv_named(g, "model.5").tensor_c_out() == 60);
    CHECK(conv_named(g, "model.5").attrs.c_out == 64);
    int readers = 0;
    for (const Op& op : g.ops)
      if (const auto* c = op.get_if<ConvOp>())
        if (c->in.value == v5) {
          ++readers;
          CHECK(c->attrs.c_in == 64);
          CHECK(c->tensor_c_in() == 60);
          CHECK(c->attrs.k == 3);
        }
    CHECK(readers == 2);  // cv2.2.0 and cv3.2.0
  }
}

TEST_CASE("pad_channels leaves the input, concat buffers, residuals, the head's maps, depthwise, grouped and "
          "sliced reads and other op kinds alone", "[graph][pad]") {
  HandGraph h;
  const ValueRef in = h.whole(Graph::kInputValue);
  // Widened: written whole by a conv, read whole by two convs (12 -> 16).
  const int chain = h.value("chain", 12), chain_a = h.value("chain.a", 16), chain_b = h.value("chain.b", 24);
  h.conv("chain", in, h.whole(chain));
  h.conv("chain.a", h.whole(chain), h.whole(chain_a));
  h.conv("chain.b", h.whole(chain), h.whole(chain_b));
  // A concat buffer of 20: two convs write its halves, a conv reads it whole.
  const int cat = h.value("cat", 20), cat_r = h.value("cat.r", 16);
  h.conv("cat.0", in, ValueRef{cat, 0, 10});
  h.conv("cat.1", in, ValueRef{cat, 10, 10});
  h.conv("cat.r", h.whole(cat), h.whole(cat_r));
  // Read whole by one conv and as another conv's residual.
  const int res = h.value("res", 12), res_a = h.value("res.a", 12), res_b = h.value("res.b", 12);
  h.conv("res", in, h.whole(res));
  h.conv("res.a", h.whole(res), h.whole(res_a));
  h.conv("res.b", h.whole(res_a), h.whole(res_b), 1, h.whole(res));
  // res.a: written whole, read whole by one groups-1 conv (res.b, which has a residual of its own): widened.
  // Written by a conv that adds a residual.
  const int with_res = h.value("with_res", 12), with_res_r = h.value("with_res.r", 16);
  h.conv("with_res", h.whole(res_b), h.whole(with_res), 1, h.whole(res_b));
  h.conv("with_res.r", h.whole(with_res), h.whole(with_res_r));
  // Read by a depthwise conv, and by a grouped one.
  const int dw = h.value("dw", 12), dw_r = h.value("dw.r", 12), grp = h.value("grp", 12), grp_r = h.value("grp.r", 6);
  h.conv("dw", in, h.whole(dw));
  h.conv("dw.r", h.whole(dw), h.whole(dw_r), 12);
  h.conv("grp", in, h.whole(grp));
  h.conv("grp.r", h.whole(grp), h.whole(grp_r), 2);
  // Written by a grouped conv, read whole by a conv.
  const int by_grp = h.value("by_grp", 12), by_grp_r = h.value("by_grp.r", 16);
  h.conv("by_grp", h.whole(dw_r), h.whole(by_grp), 2);
  h.conv("by_grp.r", h.whole(by_grp), h.whole(by_grp_r));
  // Read through slices: one reader takes 6 of 12 channels; the other the whole.
  const int sliced = h.value("sliced", 12), sliced_a = h.value("sliced.a", 16), sliced_b = h.value("sliced.b", 16);
  h.conv("sliced", in, h.whole(sliced));
  h.conv("sliced.a", ValueRef{sliced, 0, 6}, h.whole(sliced_a));
  h.conv("sliced.b", h.whole(sliced), h.whole(sliced_b));
  const int offset = h.value("offset", 12), offset_r = h.value("offset.r", 16);  // a slice at c0 4
  h.conv("offset", in, h.whole(offset));
  h.conv("offset.r", ValueRef{offset, 4, 8}, h.whole(offset_r));
  // Read by other op kinds, and written by one.
  const int pooled = h.value("pooled", 12), pool_out = h.value("pool.out", 12);
  h.conv("pooled", in, h.whole(pooled));
  yolo12::graph::MaxPoolOp mp;
  mp.in = h.whole(pooled);
  mp.out = h.whole(pool_out);
  h.other("pool", mp);
  const int copied = h.value("copied", 12), copy_out = h.value("copy.out", 24);
  h.conv("copied", in, h.whole(copied));
  yolo12::graph::CopyOp cp;
  cp.in = h.whole(copied);
  cp.out = ValueRef{copy_out, 0, 12};
  h.other("copy", cp);
  h.conv("copy.rest", in, ValueRef{copy_out, 12, 12});
  const int up = h.value("up", 12), up_r = h.value("up.r", 16);
  yolo12::graph::UpsampleOp us;
  us.attrs.factor = 1;
  us.in = h.whole(pool_out);
  us.out = h.whole(up);
  h.other("upsample", us);
  h.conv("up.r", h.whole(up), h.whole(up_r));
  // What the head reads: a map the head reads and a conv reads too.
  const int box = h.value("box", 12), cls = h.value("cls", 12), cls_r = h.value("cls.r", 16);
  h.conv("box", in, h.whole(box));
  h.conv("cls", in, h.whole(cls));
  h.conv("cls.r", h.whole(cls), h.whole(cls_r));
  h.g.head.detect.box = {h.whole(box)};
  h.g.head.detect.cls = {h.whole(cls)};
  h.g.outputs = h.g.head.inputs();
  // Never read (a conv's dead output): widened too, harmlessly (no reader to disagree).
  const int dead = h.value("dead", 12);
  h.conv("dead", in, h.whole(dead));
  // Already aligned: untouched.
  const int aligned = h.value("aligned", 16), aligned_r = h.value("aligned.r", 24);
  h.conv("aligned", in, h.whole(aligned));
  h.conv("aligned.r", h.whole(aligned), h.whole(aligned_r));
  const Graph& built = h.g;
  check_consistent(built);

  Graph g = built;
  const std::vector<int> widened = yolo12::graph::pad_channels(g);
  check_consistent(g);
  REQUIRE(widened == std::vector<int>{chain, res_a, dead});
  const std::set<int> wide(widened.begin(), widened.end());
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    INFO("value " << g.values[v].name);
    CHECK(g.values[v].c == (wide.count(static_cast<int>(v)) ? 16 : built.values[v].c));
  }
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const std::string& n = g.ops[i].name;
    INFO("op " << n);
    const bool touched = n == "chain" || n == "chain.a" || n == "chain.b" || n == "res.a" || n == "res.b" || n == "dead";
    CHECK((dump_op(g.ops[i]) != dump_op(built.ops[i])) == touched);
  }
  const ConvOp& p = conv_named(g, "chain");
  CHECK((p.attrs.c_out == 16 && p.out.c == 16 && p.weight_c_out == 12 && p.weight_c_in == 0));
  for (const char* reader : {"chain.a", "chain.b"}) {
    const ConvOp& r = conv_named(g, reader);
    CHECK((r.attrs.c_in == 16 && r.in.c == 16 && r.weight_c_in == 12 && r.weight_c_out == 0));
  }
  // res.b reads the widened res.a and writes res (unwidened) as before: one side recorded only.
  const ConvOp& rb = conv_named(g, "res.b");
  CHECK((rb.attrs.c_in == 16 && rb.weight_c_in == 12 && rb.attrs.c_out == 12 && rb.weight_c_out == 0));
  CHECK(g.outputs.size() == 2);
  CHECK(g.values[static_cast<std::size_t>(Graph::kInputValue)].c == 3);
}

TEST_CASE("pad_channels leaves a graph with nothing to widen byte for byte", "[graph][pad]") {
  for (const auto& size : {std::pair<int, int>{64, 96}, std::pair<int, int>{128, 128}}) {
    const Graph before = yolo12::graph::build_graph(aligned_model(), size.first, size.second);
    Graph g = before;
    CHECK(yolo12::graph::pad_channels(g).empty());
    CHECK(dump(g) == dump(before));
    check_consistent(g);
  }
  json a2 = kA2C2fL;
  a2["mlp_ratio"] = 2.0;  // yolo12n..m: 64 -> 128 -> 64
  const Graph before = yolo12::graph::build_graph(tiny_header(a2), 64, 96);
  Graph g = before;
  CHECK(yolo12::graph::pad_channels(g).empty());
  CHECK(dump(g) == dump(before));
}
