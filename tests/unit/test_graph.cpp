// tests/unit/test_graph.cpp - the graph builder (src/graph/builder.cpp) and its module table
// (src/graph/modules): op counts per layer type, dataflow of the whole YOLO12n / YOLO11n / YOLOv8n
// graphs (every read after its write, concat slices disjoint and covering), the required tensor list
// against numbers and shapes derived here independently (and Ultralytics' own parameter counts),
// every module of the table built on a fixture, and bad headers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "graph/graph.hpp"
#include "tiny_header.hpp"
#include "yolo12n_layers.hpp"

using yolo12::test::kYolo12n;
using yolo12::test::tiny_header;
#include "graph/memory_plan.hpp"
#include "graph/modules/module.hpp"
#include "graph/schedule.hpp"
#include "yolo12/errors.hpp"

using nlohmann::json;
using yolo12::test::model_header;
using yolo12::graph::AttentionOp;
using yolo12::graph::ConvOp;
using yolo12::graph::Graph;
using yolo12::graph::Module;
using yolo12::graph::Op;
using yolo12::graph::OpKind;
using yolo12::graph::ParamSpec;
using yolo12::graph::ValueRef;

namespace {

// YOLO11n (yolo11.yaml, scale n): adds SPPF and C2PSA.
const char* kYolo11n = R"([
{"index":0,"type":"Conv","from":[-1],"c1":3,"c2":16,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":1,"type":"Conv","from":[0],"c1":16,"c2":32,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":2,"type":"C3k2","from":[1],"c1":32,"c2":64,"n":1,"c3k":false,"e":0.25,"g":1,"shortcut":true},
{"index":3,"type":"Conv","from":[2],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":4,"type":"C3k2","from":[3],"c1":64,"c2":128,"n":1,"c3k":false,"e":0.25,"g":1,"shortcut":true},
{"index":5,"type":"Conv","from":[4],"c1":128,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":6,"type":"C3k2","from":[5],"c1":128,"c2":128,"n":1,"c3k":true,"e":0.5,"g":1,"shortcut":true},
{"index":7,"type":"Conv","from":[6],"c1":128,"c2":256,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":8,"type":"C3k2","from":[7],"c1":256,"c2":256,"n":1,"c3k":true,"e":0.5,"g":1,"shortcut":true},
{"index":9,"type":"SPPF","from":[8],"c1":256,"c2":256,"k":5,"cv1_act":"silu"},
{"index":10,"type":"C2PSA","from":[9],"c1":256,"c2":256,"n":1,"e":0.5},
{"index":11,"type":"Upsample","from":[10],"scale":2,"mode":"nearest"},
{"index":12,"type":"Concat","from":[11,6],"dim":1},
{"index":13,"type":"C3k2","from":[12],"c1":384,"c2":128,"n":1,"c3k":false,"e":0.5,"g":1,"shortcut":true},
{"index":14,"type":"Upsample","from":[13],"scale":2,"mode":"nearest"},
{"index":15,"type":"Concat","from":[14,4],"dim":1},
{"index":16,"type":"C3k2","from":[15],"c1":256,"c2":64,"n":1,"c3k":false,"e":0.5,"g":1,"shortcut":true},
{"index":17,"type":"Conv","from":[16],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":18,"type":"Concat","from":[17,13],"dim":1},
{"index":19,"type":"C3k2","from":[18],"c1":192,"c2":128,"n":1,"c3k":false,"e":0.5,"g":1,"shortcut":true},
{"index":20,"type":"Conv","from":[19],"c1":128,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":21,"type":"Concat","from":[20,10],"dim":1},
{"index":22,"type":"C3k2","from":[21],"c1":384,"c2":256,"n":1,"c3k":true,"e":0.5,"g":1,"shortcut":true},
{"index":23,"type":"Detect","from":[16,19,22],"nc":80,"reg_max":16,"ch":[64,128,256],"legacy":false,"c2":64,"c3":80}
])";

// YOLOv8n (yolov8.yaml, scale n): C2f and the legacy Detect class branch.
const char* kYolov8n = R"([
{"index":0,"type":"Conv","from":[-1],"c1":3,"c2":16,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":1,"type":"Conv","from":[0],"c1":16,"c2":32,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":2,"type":"C2f","from":[1],"c1":32,"c2":32,"n":1,"shortcut":true,"g":1,"e":0.5},
{"index":3,"type":"Conv","from":[2],"c1":32,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":4,"type":"C2f","from":[3],"c1":64,"c2":64,"n":2,"shortcut":true,"g":1,"e":0.5},
{"index":5,"type":"Conv","from":[4],"c1":64,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":6,"type":"C2f","from":[5],"c1":128,"c2":128,"n":2,"shortcut":true,"g":1,"e":0.5},
{"index":7,"type":"Conv","from":[6],"c1":128,"c2":256,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":8,"type":"C2f","from":[7],"c1":256,"c2":256,"n":1,"shortcut":true,"g":1,"e":0.5},
{"index":9,"type":"SPPF","from":[8],"c1":256,"c2":256,"k":5},
{"index":10,"type":"Upsample","from":[9],"scale":2,"mode":"nearest"},
{"index":11,"type":"Concat","from":[10,6],"dim":1},
{"index":12,"type":"C2f","from":[11],"c1":384,"c2":128,"n":1,"shortcut":false,"g":1,"e":0.5},
{"index":13,"type":"Upsample","from":[12],"scale":2,"mode":"nearest"},
{"index":14,"type":"Concat","from":[13,4],"dim":1},
{"index":15,"type":"C2f","from":[14],"c1":192,"c2":64,"n":1,"shortcut":false,"g":1,"e":0.5},
{"index":16,"type":"Conv","from":[15],"c1":64,"c2":64,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":17,"type":"Concat","from":[16,12],"dim":1},
{"index":18,"type":"C2f","from":[17],"c1":192,"c2":128,"n":1,"shortcut":false,"g":1,"e":0.5},
{"index":19,"type":"Conv","from":[18],"c1":128,"c2":128,"k":3,"s":2,"p":1,"g":1,"d":1,"act":"silu"},
{"index":20,"type":"Concat","from":[19,9],"dim":1},
{"index":21,"type":"C2f","from":[20],"c1":384,"c2":256,"n":1,"shortcut":false,"g":1,"e":0.5},
{"index":22,"type":"Detect","from":[15,18,21],"nc":80,"reg_max":16,"ch":[64,128,256],"legacy":true,"c2":64,"c3":80}
])";

long long numel(const std::vector<long long>& shape) {
  long long n = 1;
  for (long long d : shape) n *= d;
  return n;
}

std::map<std::string, std::vector<long long>> param_map(const std::vector<ParamSpec>& params) {
  std::map<std::string, std::vector<long long>> m;
  for (const auto& p : params) m[p.name] = p.shape;
  return m;
}

long long total_elements(const std::vector<ParamSpec>& params) {
  long long n = 0;
  for (const auto& p : params) n += numel(p.shape);
  return n;
}

// What each op reads and writes (the op table's own lists, optional operands dropped).
void op_refs(const Op& op, std::vector<ValueRef>& reads, std::vector<ValueRef>& writes) {
  auto valid = [](std::vector<ValueRef> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](const ValueRef& r) { return !r.valid(); }), v.end());
    return v;
  };
  yolo12::graph::visit_op(op, [&](const auto& o) {
    reads = valid(o.reads());
    writes = valid(o.writes());
  });
}

// Checks the dataflow of a graph: slices inside their values, every channel read was written
// before, the input is never written, and every value channel is written exactly once, except the
// channels listed in `rewritten` (value name -> count of channels written twice).
void check_dataflow(const Graph& g, const std::map<std::string, int>& rewritten = {}) {
  std::vector<std::vector<int>> writes_per_channel(g.values.size());
  for (std::size_t v = 0; v < g.values.size(); ++v) writes_per_channel[v].assign(g.values[v].c, 0);
  writes_per_channel[Graph::kInputValue].assign(3, 1);
  std::vector<ValueRef> reads, writes;
  for (const Op& op : g.ops) {
    op_refs(op, reads, writes);
    for (const ValueRef& r : reads) {
      INFO("op " << op.name << " reads value " << r.value << " [" << r.c0 << ", " << r.c0 + r.c << ")");
      REQUIRE(r.valid());
      REQUIRE(r.c0 >= 0);
      REQUIRE(r.c0 + r.c <= g.values[r.value].c);
      for (int c = r.c0; c < r.c0 + r.c; ++c) REQUIRE(writes_per_channel[r.value][c] > 0);
    }
    for (const ValueRef& w : writes) {
      INFO("op " << op.name << " writes value " << w.value << " [" << w.c0 << ", " << w.c0 + w.c << ")");
      REQUIRE(w.valid());
      REQUIRE(w.value != Graph::kInputValue);
      REQUIRE(w.c0 + w.c <= g.values[w.value].c);
      for (int c = w.c0; c < w.c0 + w.c; ++c) ++writes_per_channel[w.value][c];
    }
  }
  // The head reads the graph's outputs after the last op: every one of them was written.
  REQUIRE(!g.outputs.empty());
  for (const ValueRef& r : g.outputs) {
    INFO("the head reads value " << r.value << " [" << r.c0 << ", " << r.c0 + r.c << ")");
    REQUIRE(r.valid());
    REQUIRE(r.c0 + r.c <= g.values[r.value].c);
    for (int c = r.c0; c < r.c0 + r.c; ++c) REQUIRE(writes_per_channel[r.value][c] > 0);
  }
  for (std::size_t v = 1; v < g.values.size(); ++v) {
    int twice = 0;
    for (int n : writes_per_channel[v]) {
      INFO("value " << g.values[v].name << " has a channel written " << n << " times");
      REQUIRE(n >= 1);
      REQUIRE(n <= 2);
      twice += n == 2;
    }
    auto it = rewritten.find(g.values[v].name);
    INFO("value " << g.values[v].name);
    REQUIRE(twice == (it == rewritten.end() ? 0 : it->second));
  }
}

std::map<OpKind, int> count_ops(const Graph& g, const std::string& prefix) {
  std::map<OpKind, int> n;
  for (const Op& op : g.ops)
    if (op.name.compare(0, prefix.size(), prefix) == 0) ++n[op.kind()];
  return n;
}

// The ModelError messages of build_graph (640 x 640) and of required_params for `h`; each must throw.
std::vector<std::string> build_errors(const json& h) {
  std::vector<std::string> msgs;
  for (int pass = 0; pass < 2; ++pass) {
    try {
      if (pass == 0) yolo12::graph::build_graph(h, 640, 640);
      else yolo12::graph::required_params(h);
      FAIL("no error");
    } catch (const yolo12::ModelError& e) {
      msgs.push_back(e.what());
    }
  }
  return msgs;
}


}  // namespace

TEST_CASE("YOLO12n: required tensors match Ultralytics' counts and shapes derived here", "[graph]") {
  const json h = model_header(kYolo12n);
  const auto params = yolo12::graph::required_params(h);
  // Ultralytics yolo12n after BN folding, DFL excluded: 238 tensors, 2,590,808 numbers.
  REQUIRE(params.size() == 238);
  REQUIRE(total_elements(params) == 2590808);
  const auto m = param_map(params);
  REQUIRE(m.size() == params.size());  // unique names

  // Layer 6, A2C2f(128 -> 128, n=2, area 4): c_ = 64, 2 heads, two ABlocks per stage.
  std::map<std::string, std::vector<long long>> want = {
      {"model.6.cv1.conv.weight", {64, 128, 1, 1}}, {"model.6.cv1.conv.bias", {64}},
      {"model.6.cv2.conv.weight", {128, 192, 1, 1}}, {"model.6.cv2.conv.bias", {128}}};
  for (int stage = 0; stage < 2; ++stage)
    for (int blk = 0; blk < 2; ++blk) {
      const std::string p = "model.6.m." + std::to_string(stage) + "." + std::to_string(blk) + ".";
      want[p + "attn.qkv.conv.weight"] = {192, 64, 1, 1};
      want[p + "attn.qkv.conv.bias"] = {192};
      want[p + "attn.proj.conv.weight"] = {64, 64, 1, 1};
      want[p + "attn.proj.conv.bias"] = {64};
      want[p + "attn.pe.conv.weight"] = {64, 1, 7, 7};
      want[p + "attn.pe.conv.bias"] = {64};
      want[p + "mlp.0.conv.weight"] = {128, 64, 1, 1};
      want[p + "mlp.0.conv.bias"] = {128};
      want[p + "mlp.1.conv.weight"] = {64, 128, 1, 1};
      want[p + "mlp.1.conv.bias"] = {64};
    }
  // Layer 20, C3k2(384 -> 256, c3k): c = 128; C3k(128, 128): c_ = 64, two 3x3 bottlenecks.
  want["model.20.cv1.conv.weight"] = {256, 384, 1, 1};
  want["model.20.cv2.conv.weight"] = {256, 384, 1, 1};
  want["model.20.m.0.cv1.conv.weight"] = {64, 128, 1, 1};
  want["model.20.m.0.cv2.conv.weight"] = {64, 128, 1, 1};
  want["model.20.m.0.cv3.conv.weight"] = {128, 128, 1, 1};
  want["model.20.m.0.m.0.cv1.conv.weight"] = {64, 64, 3, 3};
  want["model.20.m.0.m.1.cv2.conv.weight"] = {64, 64, 3, 3};
  // Layer 2, C3k2(32 -> 64, e 0.25): c = 16; Bottleneck(16, 16, e 0.5): 8 hidden channels.
  want["model.2.cv1.conv.weight"] = {32, 32, 1, 1};
  want["model.2.m.0.cv1.conv.weight"] = {8, 16, 3, 3};
  want["model.2.m.0.cv2.conv.weight"] = {16, 8, 3, 3};
  want["model.2.cv2.conv.weight"] = {64, 48, 1, 1};
  // Detect: box c2 = 64, class c3 = 80, non-legacy class branch with DWConvs.
  want["model.21.cv2.0.0.conv.weight"] = {64, 64, 3, 3};
  want["model.21.cv2.2.1.conv.weight"] = {64, 64, 3, 3};
  want["model.21.cv2.1.2.weight"] = {64, 64, 1, 1};
  want["model.21.cv2.1.2.bias"] = {64};
  want["model.21.cv3.0.0.0.conv.weight"] = {64, 1, 3, 3};
  want["model.21.cv3.2.0.0.conv.weight"] = {256, 1, 3, 3};
  want["model.21.cv3.2.0.1.conv.weight"] = {80, 256, 1, 1};
  want["model.21.cv3.1.1.0.conv.weight"] = {80, 1, 3, 3};
  want["model.21.cv3.1.1.1.conv.weight"] = {80, 80, 1, 1};
  want["model.21.cv3.0.2.weight"] = {80, 80, 1, 1};
  want["model.21.cv3.0.2.bias"] = {80};
  for (const auto& [name, shape] : want) {
    INFO(name);
    REQUIRE(m.count(name) == 1);
    REQUIRE(m.at(name) == shape);
  }
  int layer6 = 0;
  for (const auto& p : params) layer6 += p.name.rfind("model.6.", 0) == 0;
  REQUIRE(layer6 == 4 + 2 * 2 * 10);
  REQUIRE(m.count("model.21.dfl.conv.weight") == 0);

  // The list does not depend on the input size, and equals what build_graph references.
  const Graph g = yolo12::graph::build_graph(h, 640, 640);
  REQUIRE(g.params.size() == params.size());
  for (std::size_t i = 0; i < params.size(); ++i) REQUIRE(g.params[i].name == params[i].name);
  REQUIRE(yolo12::graph::build_graph(h, 320, 448).params.size() == params.size());
}

TEST_CASE("YOLO12 turbo, YOLO11n and YOLOv8n: required tensors match Ultralytics' counts", "[graph]") {
  {
    // Turbo attention: qk (2c) + v (c) instead of qkv (3c), pe 5x5 instead of 7x7. The 8 ABlocks of
    // yolo12n have c_ = 64 (4 blocks) and 128 (4 blocks): 16 more tensors, 24 fewer pe weights per channel.
    json h = model_header(kYolo12n);
    for (auto& L : h["layers"])
      if (L["type"] == "A2C2f") L["attn"] = "qk_v", L["pe_k"] = 5;
    const auto params = yolo12::graph::required_params(h);
    REQUIRE(params.size() == 238 + 16);
    REQUIRE(total_elements(params) == 2590808 - 4 * 64 * 24 - 4 * 128 * 24);
    const auto m = param_map(params);
    REQUIRE(m.at("model.8.m.1.0.attn.qk.conv.weight") == std::vector<long long>{256, 128, 1, 1});
    REQUIRE(m.at("model.8.m.1.0.attn.v.conv.weight") == std::vector<long long>{128, 128, 1, 1});
    REQUIRE(m.at("model.8.m.1.0.attn.pe.conv.weight") == std::vector<long long>{128, 1, 5, 5});
    REQUIRE(m.count("model.8.m.1.0.attn.qkv.conv.weight") == 0);
  }
  {
    const auto params = yolo12::graph::required_params(model_header(kYolo11n));
    REQUIRE(params.size() == 174);
    REQUIRE(total_elements(params) == 2616232);
    const auto m = param_map(params);
    // C2PSA(256): c = 128, 2 heads of head_dim 64, key_dim 32: qkv = 128 + 2 * 2 * 32 channels.
    REQUIRE(m.at("model.10.m.0.attn.qkv.conv.weight") == std::vector<long long>{256, 128, 1, 1});
    REQUIRE(m.at("model.10.m.0.attn.pe.conv.weight") == std::vector<long long>{128, 1, 3, 3});
    REQUIRE(m.at("model.10.m.0.ffn.0.conv.weight") == std::vector<long long>{256, 128, 1, 1});
    REQUIRE(m.at("model.9.cv2.conv.weight") == std::vector<long long>{256, 512, 1, 1});
  }
  {
    const auto params = yolo12::graph::required_params(model_header(kYolov8n));
    REQUIRE(params.size() == 126);
    REQUIRE(total_elements(params) == 3151888);
    const auto m = param_map(params);
    REQUIRE(m.at("model.22.cv3.0.0.conv.weight") == std::vector<long long>{80, 64, 3, 3});  // legacy class branch
    REQUIRE(m.at("model.4.m.1.cv2.conv.weight") == std::vector<long long>{32, 32, 3, 3});   // C2f bottleneck, e = 1
  }
}

TEST_CASE("YOLO12n / YOLO11n / YOLOv8n graphs: dataflow, free concats, shapes", "[graph]") {
  for (auto [h, w] : {std::pair<int, int>{640, 640}, {384, 640}, {32, 96}}) {
    INFO("input " << h << "x" << w);
    const Graph g = yolo12::graph::build_graph(model_header(kYolo12n), h, w);
    check_dataflow(g);
    REQUIRE(g.values[Graph::kInputValue].c == 3);
    REQUIRE(g.values[Graph::kInputValue].h == h);
    REQUIRE(g.head.kind == yolo12::graph::HeadKind::Detect);
    REQUIRE(g.head.raw_channels() == 84);
    REQUIRE(g.head.raw_anchors() == (h / 8) * (w / 8) + (h / 16) * (w / 16) + (h / 32) * (w / 32));
    REQUIRE(g.head.detect.strides == std::vector<int>{8, 16, 32});
    REQUIRE(g.outputs.size() == 6);  // box and class map per level
    for (std::size_t l = 0; l < 3; ++l) {
      REQUIRE(g.values[g.head.detect.box[l].value].h * g.head.detect.strides[l] == h);
      REQUIRE(g.head.detect.box[l].c == 64);
      REQUIRE(g.head.detect.cls[l].c == 80);
    }
    // Concats are free: no copy op anywhere in yolo12n.
    REQUIRE(count_ops(g, "model.")[OpKind::Copy] == 0);
    // Per layer: 8 ABlocks -> 8 attention ops; 3 levels x 8 head convs.
    REQUIRE(count_ops(g, "model.")[OpKind::Attention] == 8);
    REQUIRE(count_ops(g, "model.21.")[OpKind::Conv] == 24);
    // The Concat layer 10 buffer holds the upsample of layer 8 (256 ch) then layer 6 (128 ch).
    const Op* up = nullptr;
    const Op* a6 = nullptr;
    for (const Op& op : g.ops) {
      if (op.name == "model.9") up = &op;
      if (op.name == "model.6.cv2") a6 = &op;
    }
    REQUIRE(up);
    REQUIRE(a6);
    const auto& ups = up->get<yolo12::graph::UpsampleOp>();
    const auto& cv2 = a6->get<yolo12::graph::ConvOp>();
    REQUIRE(ups.out.value == cv2.out.value);
    REQUIRE(ups.out.c0 == 0);
    REQUIRE(cv2.out.c0 == 256);
    REQUIRE(g.values[ups.out.value].c == 384);
  }
  {
    const Graph g = yolo12::graph::build_graph(model_header(kYolo11n), 640, 640);
    // C2PSA: the last PSABlock writes its output back over b = cat[128, 256) (b is dead by then).
    check_dataflow(g, {{"model.10.cat", 128}});
    REQUIRE(count_ops(g, "model.9.")[OpKind::MaxPool] == 3);
    REQUIRE(count_ops(g, "model.10.")[OpKind::Attention] == 1);
  }
  {
    const Graph g = yolo12::graph::build_graph(model_header(kYolov8n), 320, 256);
    check_dataflow(g);
    REQUIRE(count_ops(g, "model.22.")[OpKind::Conv] == 18);  // legacy: 3 + 3 per level
  }
}

TEST_CASE("op counts per layer type", "[graph]") {
  auto counts = [](const json& block, bool legacy = false, const std::map<std::string, int>& rewritten = {}) {
    const Graph g = yolo12::graph::build_graph(tiny_header(block, legacy), 64, 96);
    check_dataflow(g, rewritten);
    return count_ops(g, "model.5");
  };
  {
    auto n = counts({{"type", "C2f"}, {"c1", 64}, {"c2", 64}, {"n", 2}, {"shortcut", true}, {"g", 1}, {"e", 0.5}});
    REQUIRE(n[OpKind::Conv] == 1 + 2 * 2 + 1);
    REQUIRE(n.size() == 1);
  }
  {
    auto n = counts({{"type", "C3k2"}, {"c1", 64}, {"c2", 64}, {"n", 1}, {"c3k", false}, {"e", 0.5}, {"g", 1}, {"shortcut", true}});
    REQUIRE(n[OpKind::Conv] == 4);
    n = counts({{"type", "C3k2"}, {"c1", 64}, {"c2", 64}, {"n", 2}, {"c3k", true}, {"e", 0.5}, {"g", 1}, {"shortcut", true}});
    REQUIRE(n[OpKind::Conv] == 1 + 2 * (3 + 2 * 2) + 1);
  }
  const json a2 = {{"type", "A2C2f"}, {"c1", 64}, {"c2", 64}, {"n", 1}, {"a2", true}, {"area", 2}, {"residual", true},
                   {"mlp_ratio", 1.2}, {"e", 1.0}, {"g", 1}, {"shortcut", true}, {"attn", "qkv"}, {"pe_k", 7}};
  {
    auto n = counts(a2);
    REQUIRE(n[OpKind::Conv] == 1 + 2 * 5 + 1);
    REQUIRE(n[OpKind::Attention] == 2);
    // residual: cv2 carries gamma and the layer input; the gamma tensor is required
    const Graph g = yolo12::graph::build_graph(tiny_header(a2), 64, 96);
    const auto m = param_map(g.params);
    REQUIRE(m.at("model.5.gamma") == std::vector<long long>{64});
    REQUIRE(m.at("model.5.m.0.0.mlp.0.conv.weight") == std::vector<long long>{76, 64, 1, 1});  // int(64 * 1.2)
    for (const Op& op : g.ops) {
      if (op.name == "model.5.cv2") {
        const auto& c = op.get<ConvOp>();
        REQUIRE(c.gamma == "model.5.gamma");
        REQUIRE(c.residual.valid());
        REQUIRE(c.residual.c == 64);
      }
      if (const auto* a = op.get_if<AttentionOp>()) {
        REQUIRE(a->attrs.heads == 2);
        REQUIRE(a->attrs.q_head_stride == 96);
        REQUIRE(a->k.c0 - a->q.c0 == 32);
        REQUIRE(a->v_image.valid());  // v is interleaved with q, k: written out for pe
        REQUIRE(a->attrs.area == 2);
      }
      if (op.name.find("attn.pe") != std::string::npos) {
        const auto& c = op.get<ConvOp>();
        REQUIRE(c.attrs.groups == 64);
        REQUIRE(c.attrs.k == 7);
        REQUIRE(c.residual.valid());
        REQUIRE(c.attrs.act == yolo12::graph::Act::None);
      }
    }
  }
  {
    json t = a2;
    t["attn"] = "qk_v";
    t["pe_k"] = 5;
    t["residual"] = false;
    auto n = counts(t);
    REQUIRE(n[OpKind::Conv] == 1 + 2 * 6 + 1);
    const Graph g = yolo12::graph::build_graph(tiny_header(t), 64, 96);
    REQUIRE(param_map(g.params).count("model.5.gamma") == 0);
    for (const Op& op : g.ops)
      if (const auto* a = op.get_if<AttentionOp>()) {
        REQUIRE(a->attrs.q_head_stride == 32);
        REQUIRE(a->k.c0 - a->q.c0 == 64);
        REQUIRE_FALSE(a->v_image.valid());  // the v conv output already is the pe input
      }
  }
  {
    json t = a2;
    t["a2"] = false;
    t["area"] = -1;
    t["residual"] = false;
    auto n = counts(t);
    REQUIRE(n[OpKind::Conv] == 1 + 7 + 1);  // cv1, C3k(cv1, cv2, cv3, 2 bottlenecks), cv2
    REQUIRE(n[OpKind::Attention] == 0);
  }
  {
    auto n = counts({{"type", "SPPF"}, {"c1", 64}, {"c2", 64}, {"k", 5}});
    REQUIRE(n[OpKind::Conv] == 2);
    REQUIRE(n[OpKind::MaxPool] == 3);
  }
  {
    auto n = counts({{"type", "C2PSA"}, {"c1", 64}, {"c2", 64}, {"n", 2}, {"e", 0.5}}, false, {{"model.5.cat", 32}});
    REQUIRE(n[OpKind::Conv] == 1 + 2 * 5 + 1);
    REQUIRE(n[OpKind::Attention] == 2);
    const Graph g = yolo12::graph::build_graph(tiny_header({{"type", "C2PSA"}, {"c1", 64}, {"c2", 64}, {"n", 1}, {"e", 0.5}}), 64, 96);
    for (const Op& op : g.ops)
      if (const auto* a = op.get_if<AttentionOp>()) {
        // c = 32: one head (max(c / 64, 1)), head_dim 32, key_dim 16, scale 16^-0.5
        REQUIRE(a->attrs.heads == 1);
        REQUIRE(a->attrs.dqk == 16);
        REQUIRE(a->attrs.dv == 32);
        REQUIRE(a->attrs.scale > 0.2499f);
        REQUIRE(a->attrs.scale < 0.2501f);
      }
  }
  {
    // Detect: non-legacy 8 convs per level, legacy 6
    auto n = counts({{"type", "Conv"}, {"c1", 64}, {"c2", 48}, {"k", 1}, {"s", 1}, {"p", 0}, {"g", 1}, {"d", 1}, {"act", "silu"}});
    REQUIRE(n[OpKind::Conv] == 1);
    const Graph g = yolo12::graph::build_graph(tiny_header({{"type", "Conv"}, {"c1", 64}, {"c2", 48}, {"k", 1}, {"s", 1}, {"p", 0}, {"g", 1}, {"d", 1}, {"act", "silu"}}, true), 64, 96);
    REQUIRE(count_ops(g, "model.6")[OpKind::Conv] == 18);
    REQUIRE(g.head.raw_anchors() == 8 * 12 + 4 * 6 + 2 * 3);
    REQUIRE(g.head.raw_channels() == 4 + 3);
  }
}

TEST_CASE("a layer used twice by concats is copied once; its first use is free", "[graph]") {
  json h = model_header(kYolov8n);
  // Layer 4 (64 channels at P3) appears twice in the Concat of layer 14: it lives in the first slice
  // and one Copy op fills the second.
  h["layers"][14]["from"] = {13, 4, 4};
  h["layers"][15]["c1"] = 128 + 64 + 64;
  const Graph g = yolo12::graph::build_graph(h, 256, 320);
  check_dataflow(g);
  REQUIRE(count_ops(g, "model.14")[OpKind::Copy] == 1);
}

TEST_CASE("bad headers throw ModelError naming the layer", "[graph]") {
  auto throws_with = [](const json& h, const std::vector<std::string>& parts, int ih = 640, int iw = 640) {
    try {
      yolo12::graph::build_graph(h, ih, iw);
      FAIL("no error");
    } catch (const yolo12::ModelError& e) {
      const std::string msg = e.what();
      INFO(msg);
      for (const auto& p : parts) REQUIRE(msg.find(p) != std::string::npos);
    }
  };
  {
    json h = model_header(kYolo12n);
    h["layers"][7]["type"] = "FancyBlock";
    throws_with(h, {"layer 7", "FancyBlock", "unknown"});
    REQUIRE_THROWS_AS(yolo12::graph::required_params(h), yolo12::ModelError);
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][6].erase("area");
    throws_with(h, {"layer 6", "A2C2f", "area"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][8]["attn"] = "qkvz";
    throws_with(h, {"layer 8", "qkvz"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][3]["c1"] = 65;  // layer 2 gives 64 channels
    throws_with(h, {"layer 3", "c1"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][21]["ch"] = {64, 128, 255};
    throws_with(h, {"layer 21", "Detect", "ch"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][10]["from"] = {9, 22};
    throws_with(h, {"layer 10", "from"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][5]["g"] = 3;  // 128 channels are not divisible by 3 groups
    throws_with(h, {"layer 5", "groups"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"][6]["e"] = 0.3;  // int(128 * 0.3) = 38 is not a multiple of 32
    throws_with(h, {"layer 6", "multiple of 32"});
  }
  {
    json h = model_header(kYolo12n);
    h["layers"].erase(21);
    throws_with(h, {"Detect"});
  }
  // Input size not a multiple of 32.
  throws_with(model_header(kYolo12n), {"multiple"}, 640, 600);
  {
    // A Detect on the input image (the only layer, so from -1 is allowed): refused by name. The
    // builder before the module table read a layer output at index -1 here (out of bounds).
    json h = model_header(R"([{"index":0,"type":"Detect","from":[-1],"nc":80,"reg_max":16,"ch":[3],"legacy":true,"c2":8,"c3":8}])");
    h["strides"] = {1};
    throws_with(h, {"layer 0", "Detect", "reads the input image"}, 64, 64);
    REQUIRE_THROWS_AS(yolo12::graph::required_params(h), yolo12::ModelError);
  }
  {
    // area 3 on a 2 x 3 map (6 tokens) works, on a 2 x 2 map (4 tokens) it cannot: caught when the
    // graph is built, not during an inference.
    json block = {{"type", "A2C2f"}, {"c1", 64}, {"c2", 64}, {"n", 1}, {"a2", true}, {"area", 3}, {"residual", false},
                  {"mlp_ratio", 2.0}, {"e", 0.5}, {"g", 1}, {"shortcut", true}, {"attn", "qkv"}, {"pe_k", 7}};
    REQUIRE_NOTHROW(yolo12::graph::build_graph(tiny_header(block), 64, 96));
    throws_with(tiny_header(block), {"layer 5", "area=3", "tokens"}, 64, 64);
    REQUIRE_NOTHROW(yolo12::graph::required_params(tiny_header(block)));
  }
}

TEST_CASE("out-of-range, non-integral and non-finite fields throw ModelError naming the field (issue 13)", "[graph]") {
  // Each of these used to reach a float-to-int conversion or an int product that overflows
  // (undefined behaviour, caught by UBSan); the checked reader and the 64-bit shape arithmetic
  // reject them with a message that says what is wrong.
  auto throws_with = [](const json& h, const std::vector<std::string>& parts) {
    for (const std::string& msg : build_errors(h)) {  // build_graph and required_params read the same fields
      INFO(msg);
      for (const auto& p : parts) REQUIRE(msg.find(p) != std::string::npos);
    }
  };
  auto with = [](int layer, const char* key, const json& value) {
    json h = model_header(kYolo12n);
    h["layers"][layer][key] = value;
    return h;
  };
  throws_with(with(0, "k", 1e300), {"layer 0", "field 'k'", "out of range"});
  throws_with(with(0, "k", 2.5), {"layer 0", "field 'k'", "must be an integer"});
  throws_with(with(0, "c2", json(1LL << 40)), {"layer 0", "field 'c2'", "out of range"});
  throws_with(with(0, "c2", json(~0ULL)), {"layer 0", "field 'c2'", "out of range"});
  throws_with(with(2, "e", 1e300), {"layer 2", "hidden channels", "out of range"});
  throws_with(with(2, "e", std::nan("")), {"layer 2", "field 'e'", "finite"});
  throws_with(with(2, "n", 100000), {"layer 2", "n must be in 0..256"});
  throws_with(with(6, "mlp_ratio", 1e300), {"layer 6", "mlp hidden channels", "out of range"});
  throws_with(with(9, "scale", 1e300), {"layer 9", "scale must be a positive integer"});
  throws_with(with(21, "nc", json(1LL << 40)), {"layer 21", "field 'nc'", "out of range"});
  throws_with(with(10, "from", json::array({9, 1LL << 40})), {"layer 10", "field 'from'", "out of range"});
  {
    // The default padding d * (k - 1) / 2 of k 40001, d 40000 is 8e8: too large (an int product
    // that fits, and one step from those that do not).
    json h = with(0, "k", 40001);
    h["layers"][0]["d"] = 40000;
    h["layers"][0].erase("p");
    throws_with(h, {"layer 0", "padding", "outside"});
  }
  {
    // Upsample of the 20 x 20 P5 map by 2^23: 167772160 pixels a side, beyond the 2^24 limit.
    json h = with(9, "scale", json(1 << 23));
    throws_with(h, {"layer 9", "output height", "outside"});
  }
}

namespace {

// The ops layer `i` emitted: named "model.i", "model.i.<sub-module>" or "model.i <- model.f" (copies).
std::map<OpKind, int> layer_ops(const Graph& g, int i) {
  const std::string p = "model." + std::to_string(i);
  std::map<OpKind, int> n;
  for (const Op& op : g.ops)
    if (op.name == p || op.name.compare(0, p.size() + 1, p + ".") == 0 || op.name.compare(0, p.size() + 1, p + " ") == 0)
      ++n[op.kind()];
  return n;
}

}  // namespace

TEST_CASE("the module table: every type it lists builds on a fixture model", "[graph][modules]") {
  const std::vector<Module>& table = yolo12::graph::module_table();
  REQUIRE(!table.empty());
  std::set<std::string> types;
  for (const Module& m : table) {
    INFO("module " << m.type);
    REQUIRE(types.insert(m.type).second);  // each type once
    REQUIRE(yolo12::graph::find_module(m.type) == &m);
    REQUIRE(m.shape != nullptr);
    REQUIRE(m.expand != nullptr);
  }
  REQUIRE(yolo12::graph::find_module("FancyBlock") == nullptr);

  // The fixtures: the three whole models of this file, YOLO12n with turbo attention and residual
  // A2C2f, and tiny_header() with SPPF's cv1 without activation and a C3k2 of no blocks.
  struct Fixture {
    json header;
    std::map<std::string, int> rewritten;  // for check_dataflow
  };
  std::vector<Fixture> fixtures = {{model_header(kYolo12n), {}}, {model_header(kYolo11n), {{"model.10.cat", 128}}},
                                   {model_header(kYolov8n), {}}};
  {
    json h = model_header(kYolo12n);
    for (auto& L : h["layers"])
      if (L["type"] == "A2C2f" && L["a2"] == true) L["attn"] = "qk_v", L["pe_k"] = 5, L["residual"] = true;
    fixtures.push_back({h, {}});
  }
  fixtures.push_back({tiny_header({{"type", "SPPF"}, {"c1", 64}, {"c2", 64}, {"k", 3}, {"cv1_act", "none"}}), {}});
  fixtures.push_back({tiny_header({{"type", "C3k2"}, {"c1", 64}, {"c2", 64}, {"n", 0}, {"c3k", true}, {"e", 0.5}, {"g", 1}, {"shortcut", false}}), {}});

  std::map<std::string, int> layers_of_type;
  for (std::size_t f = 0; f < fixtures.size(); ++f) {
    const json& h = fixtures[f].header;
    INFO("fixture " << f);
    const Graph g = yolo12::graph::build_graph(h, 320, 256);
    check_dataflow(g, fixtures[f].rewritten);
    REQUIRE(yolo12::graph::required_params(h).size() == g.params.size());
    const int n = static_cast<int>(h["layers"].size());
    for (int i = 0; i < n; ++i) {
      const std::string type = h["layers"][i]["type"];
      INFO("layer " << i << " (" << type << ")");
      const Module* m = yolo12::graph::find_module(type);
      REQUIRE(m != nullptr);
      ++layers_of_type[type];
      const std::map<OpKind, int> ops = layer_ops(g, i);
      int total = 0, copies = 0;
      for (const auto& [kind, count] : ops) {
        total += count;
        if (kind == OpKind::Copy) copies += count;
      }
      if (m->hosts_inputs) {
        REQUIRE(total == copies);  // a Concat is free, or copies what lives elsewhere
      } else {
        REQUIRE(total > 0);
      }
      if (m->head) {
        REQUIRE(i == n - 1);
        // The head's layer produced every map the graph ends at.
        for (const ValueRef& r : g.outputs) {
          bool written = false;
          for (const Op& op : g.ops) {
            std::vector<ValueRef> reads, writes;
            op_refs(op, reads, writes);
            for (const ValueRef& w : writes) written = written || (w.value == r.value && op.name.rfind("model." + std::to_string(i) + ".", 0) == 0);
          }
          REQUIRE(written);
        }
      }
    }
  }
  for (const Module& m : table) {
    INFO("module type " << m.type << " has no layer in this test's fixtures: add one");
    REQUIRE(layers_of_type[m.type] > 0);
  }
}

TEST_CASE("an unknown layer type's error lists every type of the module table", "[graph][modules]") {
  const std::vector<Module>& table = yolo12::graph::module_table();
  std::string listed;  // the table's types in its order, as the message lists them
  for (const Module& m : table) listed += (listed.empty() ? "" : ", ") + std::string(m.type);
  REQUIRE(yolo12::graph::module_types() == listed);

  json h = model_header(kYolo12n);
  h["layers"][7]["type"] = "FancyBlock";
  for (const std::string& msg : build_errors(h)) {
    INFO(msg);
    REQUIRE(msg.find("model layer 7 (FancyBlock): unknown module type; this engine implements " + listed + ";") !=
            std::string::npos);
    for (const Module& m : table) REQUIRE(msg.find(m.type) != std::string::npos);
  }

  // A model without a head: the message names the table's heads.
  std::string heads;
  for (const Module& m : table)
    if (m.head) heads += (heads.empty() ? "" : " or ") + std::string(m.type);
  REQUIRE(!heads.empty());
  REQUIRE(yolo12::graph::module_types(/*heads_only=*/true, " or ") == heads);
  h = model_header(kYolo12n);
  h["layers"].erase(21);
  try {
    yolo12::graph::build_graph(h, 640, 640);
    FAIL("no error");
  } catch (const yolo12::ModelError& e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).find("the last layer must be " + heads + ";") != std::string::npos);
  }
}

// ---- the multi-stream schedule (graph/schedule.hpp) ---------------------------------------------------

namespace {

// The bytes per value the CUDA executor plans: NHWC values of `elem` bytes for `batch` images, 256-byte
// aligned (executor.cu, plan_memory).
std::vector<std::size_t> value_bytes(const Graph& g, int batch, std::size_t elem) {
  const std::vector<yolo12::graph::Lifetime> life = yolo12::graph::value_lifetimes(g);
  std::vector<std::size_t> size(g.values.size(), 0);
  for (std::size_t v = 0; v < size.size(); ++v)
    if (life[v].first != yolo12::graph::Lifetime::kUnused)
      size[v] = (elem * batch * g.values[v].c * g.values[v].h * g.values[v].w + 255) / 256 * 256;
  return size;
}

// Each value on bytes of its own.
yolo12::graph::ArenaLayout own_bytes(const std::vector<std::size_t>& size) {
  yolo12::graph::ArenaLayout layout{std::vector<std::size_t>(size.size(), 0), size};
  std::size_t top = 0;
  for (std::size_t v = 0; v < size.size(); ++v) {
    layout.offset[v] = top;
    top += size[v];
  }
  return layout;
}

// The ops each op directly follows in the schedule: the previous op of its stream and its waits.
std::vector<std::vector<int>> predecessors(const yolo12::graph::Schedule& s) {
  std::vector<std::vector<int>> preds(s.stream.size());
  std::vector<int> last(static_cast<std::size_t>(s.streams), -1);
  for (std::size_t j = 0; j < preds.size(); ++j) {
    preds[j] = s.waits[j];
    int& prev = last[static_cast<std::size_t>(s.stream[j])];
    if (prev >= 0) preds[j].push_back(prev);
    prev = static_cast<int>(j);
  }
  return preds;
}

// reach[j][i]: op i is ordered before op j by stream order and waits, computed here from the
// schedule's edges alone (not from its clocks).
std::vector<std::vector<char>> reachability(const yolo12::graph::Schedule& s) {
  const std::vector<std::vector<int>> preds = predecessors(s);
  const std::size_t n = preds.size(), words = (n + 63) / 64;
  std::vector<std::vector<std::uint64_t>> bits(n, std::vector<std::uint64_t>(words, 0));
  for (std::size_t j = 0; j < n; ++j)
    for (int p : preds[j]) {
      const auto up = static_cast<std::size_t>(p);
      bits[j][up / 64] |= std::uint64_t{1} << (up % 64);
      for (std::size_t k = 0; k < words; ++k) bits[j][k] |= bits[up][k];
    }
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < n; ++i) reach[j][i] = static_cast<char>((bits[j][i / 64] >> (i % 64)) & 1);
  return reach;
}

// Ops on the longest chain of edges (the critical path in op counts).
int critical_path(const yolo12::graph::Schedule& s) {
  const std::vector<std::vector<int>> preds = predecessors(s);
  std::vector<int> depth(preds.size(), 1);
  int best = 0;
  for (std::size_t j = 0; j < preds.size(); ++j) {
    for (int p : preds[j]) depth[j] = std::max(depth[j], depth[static_cast<std::size_t>(p)] + 1);
    best = std::max(best, depth[j]);
  }
  return best;
}

}  // namespace

TEST_CASE("multi-stream schedule: every pair of ops that touch a common byte stays ordered", "[graph][schedule]") {
  for (const char* layers : {kYolo12n, kYolo11n, kYolov8n}) {
    for (auto [h, w] : {std::pair<int, int>{640, 640}, {256, 320}}) {
      const Graph g = yolo12::graph::build_graph(model_header(layers), h, w);
      const int n = static_cast<int>(g.ops.size());
      const std::vector<yolo12::graph::Lifetime> life = yolo12::graph::value_lifetimes(g);
      for (std::size_t elem : {2u, 4u}) {
        const std::vector<std::size_t> size = value_bytes(g, 2, elem);
        for (int ms : {1, 2, 4, 8}) {
          INFO("layers " << std::string(layers).substr(0, 80) << " " << h << "x" << w << " elem " << elem
                         << " max_streams " << ms);
          const yolo12::graph::ConcurrentPlan plan = yolo12::graph::plan_concurrent(g, size, ms);
          const yolo12::graph::ArenaLayout& layout = plan.layout;
          const yolo12::graph::Schedule& s = plan.schedule;
          // The layout: inside the arena, and values alive at once in execution order never share bytes.
          REQUIRE(plan.bytes <= plan.naive_bytes);
          for (std::size_t u = 0; u < size.size(); ++u) {
            if (!layout.bytes[u]) continue;
            REQUIRE(layout.offset[u] + layout.bytes[u] <= plan.bytes);
            for (std::size_t v = u + 1; v < size.size(); ++v)
              if (layout.bytes[v] && life[u].overlaps(life[v]))
                REQUIRE((layout.offset[u] + layout.bytes[u] <= layout.offset[v] ||
                         layout.offset[v] + layout.bytes[v] <= layout.offset[u]));
          }
          REQUIRE(s.streams >= 1);
          REQUIRE(s.streams <= ms);
          REQUIRE(s.stream.size() == g.ops.size());
          std::vector<char> waited(static_cast<std::size_t>(n), 0);
          for (int j = 0; j < n; ++j) {
            REQUIRE((s.stream[j] >= 0 && s.stream[j] < s.streams));
            for (int d : s.waits[j]) {
              REQUIRE(d < j);
              REQUIRE(s.stream[d] != s.stream[j]);
              waited[d] = 1;
            }
          }
          for (int j = 0; j < n; ++j) REQUIRE(static_cast<bool>(s.signals[j]) == static_cast<bool>(waited[j]));
          const auto reach = reachability(s);
          int conflicts = 0, unordered = 0, clock_mismatch = 0;
          std::string first;
          for (int j = 0; j < n; ++j)
            for (int i = 0; i < j; ++i) {
              clock_mismatch += static_cast<bool>(reach[j][i]) != s.ordered(i, j);
              if (!yolo12::graph::ops_conflict(g, layout, i, j)) continue;
              ++conflicts;
              if (!reach[j][i] && unordered++ == 0) first = g.ops[i].name + " before " + g.ops[j].name;
            }
          INFO("first unordered conflicting pair: " << first);
          REQUIRE(unordered == 0);
          REQUIRE(clock_mismatch == 0);
          REQUIRE(conflicts >= n - 1);  // at least a chain's worth: the test is not vacuous
          if (ms == 1) {
            REQUIRE(s.streams == 1);
            for (int j = 0; j < n; ++j) REQUIRE(s.waits[j].empty());
            REQUIRE(critical_path(s) == n);
          } else {
            REQUIRE(s.streams >= 2);
            REQUIRE(critical_path(s) < n);
          }
          if (ms >= 4) {
            // P3's box and class chains run side by side, and beside the neck's last op.
            const std::string head = g.ops.back().name.substr(0, g.ops.back().name.find(".cv"));
            auto op_index = [&](const std::string& name) {
              for (int i = 0; i < n; ++i)
                if (g.ops[i].name == name) return i;
              FAIL("no op " << name);
              return -1;
            };
            const int box = op_index(head + ".cv2.0.2"), cls = op_index(head + ".cv3.0.2");
            int neck = n - 1;
            while (neck > 0 && g.ops[neck].name.rfind(head + ".", 0) == 0) --neck;
            INFO("head " << head << ": box " << box << ", class " << cls << ", neck's last op " << neck);
            REQUIRE_FALSE(s.ordered(std::min(box, cls), std::max(box, cls)));
            REQUIRE_FALSE(s.ordered(std::min(box, neck), std::max(box, neck)));
            REQUIRE(critical_path(s) <= n - 12);
          }
        }
      }
    }
  }
}

TEST_CASE("multi-stream schedule: reused arena memory orders ops that share no value", "[graph][schedule]") {
  // Scheduled as if every value had bytes of its own, the real plan's reuse leaves conflicting pairs
  // unordered: the memory part of the dependencies is needed, and the test above would see it missing.
  const Graph g = yolo12::graph::build_graph(model_header(kYolo12n), 640, 640);
  const std::vector<std::size_t> size = value_bytes(g, 1, 2);
  const yolo12::graph::ArenaLayout real = yolo12::graph::plan_concurrent(g, size, 1).layout;
  const yolo12::graph::Schedule s = yolo12::graph::schedule_ops(g, own_bytes(size), 4);
  const auto reach = reachability(s);
  int unordered = 0;
  for (std::size_t j = 0; j < g.ops.size(); ++j)
    for (std::size_t i = 0; i < j; ++i)
      if (yolo12::graph::ops_conflict(g, real, static_cast<int>(i), static_cast<int>(j)) && !reach[j][i]) ++unordered;
  REQUIRE(unordered > 0);
  // Two ops writing disjoint channel slices of one concat buffer do not conflict; a reader of the
  // whole buffer conflicts with both.
  int pairs = 0;
  for (std::size_t j = 0; j < g.ops.size(); ++j)
    for (std::size_t i = 0; i < j; ++i) {
      const auto* a = g.ops[i].get_if<ConvOp>();
      const auto* b = g.ops[j].get_if<ConvOp>();
      if (!a || !b || a->out.value != b->out.value || a->out.c0 == b->out.c0) continue;
      auto reads_value = [](const ConvOp* op, int v) { return op->in.value == v || op->residual.value == v; };
      if (reads_value(a, b->out.value) || reads_value(b, a->out.value)) continue;  // a real dependency
      REQUIRE_FALSE(yolo12::graph::ops_conflict(g, real, static_cast<int>(i), static_cast<int>(j)));
      ++pairs;
      for (std::size_t k = j + 1; k < g.ops.size(); ++k) {
        const auto* c = g.ops[k].get_if<ConvOp>();
        if (!c || c->in.value != a->out.value || c->in.c0 != 0 || c->in.c != g.values[c->in.value].c) continue;
        REQUIRE(yolo12::graph::ops_conflict(g, real, static_cast<int>(i), static_cast<int>(k)));
        REQUIRE(yolo12::graph::ops_conflict(g, real, static_cast<int>(j), static_cast<int>(k)));
      }
    }
  REQUIRE(pairs > 0);
  REQUIRE_THROWS_AS(yolo12::graph::schedule_ops(g, real, 0), yolo12::OptionError);
}
