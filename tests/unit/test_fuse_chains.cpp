// tests/unit/test_fuse_chains.cpp - graph::fuse_conv_chains (src/graph/fuse_chains.hpp), the pass that makes
// ConvChain ops of runs of 1x1 convs: the chains it finds in YOLO12n at 640 (the A2C2f blocks' attention tail
// and MLP, Detect's class convs) with their stored outputs and residual links, the lifetimes of their scratch
// values, how the limits change them, each rule on a hand-made graph, graphs it leaves alone, and, most of all,
// that the CPU executor gives bit-identical results on the fused graph (yolo12n and yolo12l_narrow with their
// random-weight checkpoints), also where graph::pad_channels ran first as in the CUDA backend.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "backends/cpu/executor.hpp"
#include "backends/cpu/ops.hpp"
#include "graph/fuse_chains.hpp"
#include "graph/graph.hpp"
#include "graph/memory_plan.hpp"
#include "graph/pad_channels.hpp"
#include "graph/schedule.hpp"
#include "model/model_file.hpp"
#include "support.hpp"
#include "yolo12/errors.hpp"
#include "yolo12n_layers.hpp"

namespace t = yolo12::test;
using nlohmann::json;
using yolo12::graph::ChainLimits;
using yolo12::graph::ConvChainOp;
using yolo12::graph::ConvOp;
using yolo12::graph::Graph;
using yolo12::graph::Op;
using yolo12::graph::ValueRef;

namespace {

json yolo12n_header() { return t::model_header(t::kYolo12n); }

std::string ref_str(const ValueRef& r) {
  return std::to_string(r.value) + "[" + std::to_string(r.c0) + "+" + std::to_string(r.c) + "]";
}

std::string conv_str(const ConvOp& c) {
  const auto& a = c.attrs;
  std::ostringstream s;
  s << a.c_in << " " << a.c_out << " k" << a.k << " s" << a.stride << " p" << a.pad << " g" << a.groups << " d"
    << a.dilation << " act" << static_cast<int>(a.act) << " in " << ref_str(c.in) << " out " << ref_str(c.out)
    << " res " << ref_str(c.residual) << " w " << c.weight << " b " << c.bias << " gamma " << c.gamma << " stored "
    << c.weight_c_out << " " << c.weight_c_in;
  return s.str();
}

// An op as text; a chain as its links, one line each: two op lists with the same lines hold the same convs.
std::vector<std::string> op_lines(const Op& op) {
  if (const auto* ch = op.get_if<ConvChainOp>()) {
    std::vector<std::string> lines;
    for (const ConvOp& c : ch->links) lines.push_back("Conv " + conv_str(c));
    return lines;
  }
  std::ostringstream s;
  if (const auto* c = op.get_if<ConvOp>()) return {"Conv " + conv_str(*c)};  // as a link would show it
  s << op.name << " " << yolo12::graph::op_kind_name(op.kind());
  yolo12::graph::visit_op(op, [&](const auto& o) {
    for (const ValueRef& r : o.reads()) s << " r" << ref_str(r);
    for (const ValueRef& r : o.writes()) s << " w" << ref_str(r);
  });
  return {s.str()};
}

std::vector<std::string> flat(const Graph& g) {
  std::vector<std::string> lines;
  for (const Op& op : g.ops)
    for (std::string& l : op_lines(op)) lines.push_back(std::move(l));
  return lines;
}

// Everything but the ops: values, outputs, head, params.
std::string rest(const Graph& g) {
  std::ostringstream s;
  s << g.input_h << "x" << g.input_w << "\n";
  for (const auto& v : g.values) s << v.name << " " << v.c << " " << v.h << " " << v.w << "\n";
  for (const ValueRef& r : g.outputs) s << "out " << ref_str(r) << "\n";
  for (const ValueRef& r : g.head.inputs()) s << "head " << ref_str(r) << "\n";
  for (const auto& p : g.params) {
    s << p.name;
    for (long long d : p.shape) s << " " << d;
    s << "\n";
  }
  return s.str();
}

std::string dump(const Graph& g) {
  std::ostringstream s;
  s << rest(g);
  for (const Op& op : g.ops) {
    s << op.name << " " << yolo12::graph::op_kind_name(op.kind()) << ":";
    for (const std::string& l : op_lines(op)) s << " " << l;
    if (const auto* ch = op.get_if<ConvChainOp>())
      for (int i = 0; i < ch->attrs.links; ++i)
        s << " | link " << i << " stored " << ch->attrs.stored[i] << " residual_link " << ch->attrs.residual_link[i];
    s << "\n";
  }
  return s.str();
}

std::vector<const Op*> chains(const Graph& g) {
  std::vector<const Op*> v;
  for (const Op& op : g.ops)
    if (op.get_if<ConvChainOp>()) v.push_back(&op);
  return v;
}

const Op& op_named(const Graph& g, const std::string& name) {
  const auto it = std::find_if(g.ops.begin(), g.ops.end(), [&](const Op& op) { return op.name == name; });
  INFO("op " << name);
  REQUIRE(it != g.ops.end());
  return *it;
}

// A chain as "64->64->128->64->192 stored 0011 residual -1 -1 0 -1".
std::string chain_str(const ConvChainOp& c) {
  std::ostringstream s;
  s << c.links[0].attrs.c_in;
  for (const ConvOp& l : c.links) s << "->" << l.attrs.c_out;
  s << " stored ";
  for (int i = 0; i < c.attrs.links; ++i) s << c.attrs.stored[i];
  s << " residual";
  for (int i = 0; i < c.attrs.links; ++i) s << " " << c.attrs.residual_link[i];
  return s.str();
}

// What a fused graph must keep: the same convs in the same order (a chain's links in place of the plain
// convs), values, outputs, head and params untouched; every chain passes check_conv_chain; every value read
// was written before (a scratch value is written and read inside its chain only); the scratch values live
// exactly for their chain op, and nothing else touches them.
void check_fused(const Graph& before, const Graph& g) {
  CHECK(flat(g) == flat(before));
  CHECK(rest(g) == rest(before));
  const std::vector<yolo12::graph::Lifetime> life = yolo12::graph::value_lifetimes(g);
  std::vector<std::vector<int>> written(g.values.size());
  for (std::size_t v = 0; v < g.values.size(); ++v) written[v].assign(static_cast<std::size_t>(g.values[v].c), 0);
  written[Graph::kInputValue].assign(3, 1);
  auto mark = [&](const ValueRef& r) {
    for (int c = r.c0; c < r.c0 + r.c; ++c) written[static_cast<std::size_t>(r.value)][static_cast<std::size_t>(c)] = 1;
  };
  auto check_written = [&](const ValueRef& r, const std::string& who) {
    INFO(who << " reads " << ref_str(r));
    const std::vector<int>& w = written[static_cast<std::size_t>(r.value)];
    for (int c = r.c0; c < r.c0 + r.c; ++c) REQUIRE(w[static_cast<std::size_t>(c)]);
  };
  std::set<int> scratch;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (const auto* ch = op.get_if<ConvChainOp>()) {
      REQUIRE_NOTHROW(yolo12::graph::check_conv_chain(g, *ch, op.name));
      for (std::size_t k = 0; k < ch->links.size(); ++k) {  // link by link, as the CPU runs it
        const ConvOp& l = ch->links[k];
        check_written(l.in, op.name);
        if (l.residual.valid()) check_written(l.residual, op.name);
        mark(l.out);
      }
      for (const ValueRef& s : ch->scratch()) {
        INFO("scratch value " << g.values[static_cast<std::size_t>(s.value)].name << " of " << op.name);
        CHECK(life[static_cast<std::size_t>(s.value)].first == static_cast<int>(i));
        CHECK(life[static_cast<std::size_t>(s.value)].last == static_cast<int>(i));
        CHECK(scratch.insert(s.value).second);
      }
      continue;
    }
    yolo12::graph::visit_op(op, [&](const auto& o) {
      for (const ValueRef& r : o.reads())
        if (r.valid()) check_written(r, op.name);
      for (const ValueRef& w : o.writes())
        if (w.valid()) mark(w);
    });
  }
  for (const ValueRef& r : g.outputs) check_written(r, "the head");
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    for (const ValueRef& r : yolo12::graph::op_operands(g.ops[i]))
      if (r.valid() && scratch.count(r.value)) {
        INFO("op " << g.ops[i].name << " touches scratch value " << g.values[static_cast<std::size_t>(r.value)].name);
        CHECK(g.ops[i].get_if<ConvChainOp>());
      }
  for (const ValueRef& r : g.outputs) CHECK(!scratch.count(r.value));
}

// The name of the chain of yolo12n's ABlock `p` (attn.proj, mlp.0, mlp.1) and, where given, the next block's qkv.
std::string ablock_chain(const std::string& p, const std::string& next) {
  return p + ".attn.proj + " + p + ".mlp.0 + " + p + ".mlp.1" + (next.empty() ? "" : " + " + next + ".attn.qkv");
}

}  // namespace

TEST_CASE("fuse_conv_chains on YOLO12n at 640: the ABlocks' attention tail and MLP, Detect's class convs",
          "[graph][chains]") {
  const Graph before = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph g = before;
  REQUIRE(yolo12::graph::fuse_conv_chains(g) == 16);
  // name of the chain -> widths, stored outputs, residual links. A2C2f's cv1 writes its slice of the concat buffer,
  // which the first block's qkv reads whole; a stage's last block's output is the next stage's input the same way;
  // the C3k2-like head blocks' cv1 feeds their first C3k's cv1.
  const std::vector<std::pair<std::string, std::string>> want = {
      {"model.6.cv1 + model.6.m.0.0.attn.qkv", "128->64->192 stored 11 residual -1 -1"},
      {ablock_chain("model.6.m.0.0", "model.6.m.0.1"), "64->64->128->64->192 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.6.m.0.1", "model.6.m.1.0"), "64->64->128->64->192 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.6.m.1.0", "model.6.m.1.1"), "64->64->128->64->192 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.6.m.1.1", ""), "64->64->128->64 stored 001 residual -1 -1 0"},
      {"model.8.cv1 + model.8.m.0.0.attn.qkv", "256->128->384 stored 11 residual -1 -1"},
      {ablock_chain("model.8.m.0.0", "model.8.m.0.1"), "128->128->256->128->384 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.8.m.0.1", "model.8.m.1.0"), "128->128->256->128->384 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.8.m.1.0", "model.8.m.1.1"), "128->128->256->128->384 stored 0011 residual -1 -1 0 -1"},
      {ablock_chain("model.8.m.1.1", ""), "128->128->256->128 stored 001 residual -1 -1 0"},
      {"model.11.cv1 + model.11.m.0.cv1", "384->64->32 stored 11 residual -1 -1"},
      {"model.14.cv1 + model.14.m.0.cv1", "256->32->16 stored 11 residual -1 -1"},
      {"model.17.cv1 + model.17.m.0.cv1", "192->64->32 stored 11 residual -1 -1"},
      {"model.21.cv3.0.1.1 + model.21.cv3.0.2", "80->80->80 stored 01 residual -1 -1"},
      {"model.21.cv3.1.1.1 + model.21.cv3.1.2", "80->80->80 stored 01 residual -1 -1"},
      {"model.21.cv3.2.1.1 + model.21.cv3.2.2", "80->80->80 stored 01 residual -1 -1"},
  };
  const std::vector<const Op*> found = chains(g);
  REQUIRE(found.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("chain " << i << ": " << found[i]->name);
    CHECK(found[i]->name == want[i].first);
    CHECK(chain_str(found[i]->get<ConvChainOp>()) == want[i].second);
  }
  std::printf("fuse_conv_chains, yolo12n 640x640: %zu ops -> %zu, %zu chains\n", before.ops.size(), g.ops.size(),
              found.size());
  for (const Op* op : found) std::printf("  %-100s %s\n", op->name.c_str(), chain_str(op->get<ConvChainOp>()).c_str());

  // The first ABlock: proj (+ the block input from memory) -> mlp.0 -> mlp.1 (+ proj's output) -> the next qkv.
  const ConvChainOp& ab = op_named(g, want[1].first).get<ConvChainOp>();
  const std::string p = "model.6.m.0.0";
  CHECK(ab.links[0].weight == p + ".attn.proj.conv.weight");
  CHECK(ab.links[0].residual.valid());  // the block input, a slice of the A2C2f concat buffer
  CHECK(ab.attrs.residual_link[0] == -1);
  CHECK_FALSE(ab.attrs.stored[0]);  // x1: only mlp.1 (inside) reads it
  CHECK_FALSE(ab.attrs.stored[1]);  // the MLP's hidden map
  CHECK(ab.attrs.stored[2]);        // the block output: the next block's proj adds it
  CHECK(ab.attrs.residual_link[2] == 0);
  CHECK(ab.links[2].residual.value == ab.links[0].out.value);
  CHECK(g.values[static_cast<std::size_t>(ab.links[0].out.value)].name == p + ".x1");
  const std::vector<ValueRef> scratch = ab.scratch();
  REQUIRE(scratch.size() == 2);
  CHECK(scratch[0].value == ab.links[0].out.value);
  CHECK(scratch[1].value == ab.links[1].out.value);
  CHECK(ab.writes().size() == 2);
  const std::vector<ValueRef> reads = ab.reads();  // proj's input and its residual (and links without one)
  CHECK(std::count_if(reads.begin(), reads.end(), [](const ValueRef& r) { return r.valid(); }) == 2);
  // Detect's class branch ends in the head's map.
  const ConvChainOp& cls = op_named(g, want[13].first).get<ConvChainOp>();
  // cv1 -> qkv: cv1 writes its slice of the A2C2f concat buffer (stored: the blocks add it, the concat reads it).
  const ConvChainOp& cv1 = op_named(g, want[0].first).get<ConvChainOp>();
  CHECK(cv1.links[0].out.c0 == 0);
  CHECK(cv1.links[0].out.c < g.values[static_cast<std::size_t>(cv1.links[0].out.value)].c);
  CHECK(cv1.links[1].in.value == cv1.links[0].out.value);
  CHECK(cv1.scratch().empty());
  CHECK(cls.links[1].attrs.act == yolo12::graph::Act::None);
  CHECK(cls.links[1].out.value == g.head.detect.cls[0].value);
  check_fused(before, g);
  // The arena plans give each scratch value bytes of its own while its chain runs: the serial plan (lifetimes),
  // and the 4-stream plan (every op that touches a value sharing bytes with it is ordered with the chain).
  std::vector<std::size_t> size(g.values.size(), 0);
  for (std::size_t v = 1; v < g.values.size(); ++v)
    size[v] = static_cast<std::size_t>(g.values[v].c) * g.values[v].h * g.values[v].w;
  const std::vector<yolo12::graph::Lifetime> life = yolo12::graph::value_lifetimes(g);
  const yolo12::graph::ArenaPlan serial = yolo12::graph::plan_arena(life, size);
  const yolo12::graph::ConcurrentPlan streams = yolo12::graph::plan_concurrent(g, size, 4);
  CHECK(streams.schedule.streams > 1);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto* ch = g.ops[i].get_if<ConvChainOp>();
    if (!ch) continue;
    for (const ValueRef& s : ch->scratch()) {
      const auto sv = static_cast<std::size_t>(s.value);
      for (std::size_t u = 1; u < g.values.size(); ++u) {
        if (u == sv || life[u].first == yolo12::graph::Lifetime::kUnused) continue;
        INFO("scratch " << g.values[sv].name << " and " << g.values[u].name);
        if (life[u].overlaps(life[sv]))
          CHECK((serial.offset[u] + size[u] <= serial.offset[sv] || serial.offset[sv] + size[sv] <= serial.offset[u]));
        const auto& l = streams.layout;
        if (l.offset[u] + size[u] <= l.offset[sv] || l.offset[sv] + size[sv] <= l.offset[u]) continue;
        for (std::size_t j = 0; j < g.ops.size(); ++j)
          for (const ValueRef& r : yolo12::graph::op_operands(g.ops[j]))
            if (r.value == static_cast<int>(u)) {
              INFO("op " << g.ops[j].name);
              CHECK(j != i);  // not an operand of the chain itself
              CHECK((j <= i ? streams.schedule.ordered(static_cast<int>(j), static_cast<int>(i))
                            : streams.schedule.ordered(static_cast<int>(i), static_cast<int>(j))));
            }
      }
    }
  }

  // Deterministic, the same chains at another input size, and nothing left to fuse in a fused graph.
  Graph again = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  yolo12::graph::fuse_conv_chains(again);
  CHECK(dump(again) == dump(g));
  Graph other = yolo12::graph::build_graph(yolo12n_header(), 320, 256);
  REQUIRE(yolo12::graph::fuse_conv_chains(other) == 16);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(chains(other)[i]->name == want[i].first);
  Graph twice = g;
  CHECK(yolo12::graph::fuse_conv_chains(twice) == 0);
  CHECK(dump(twice) == dump(g));
  // pad_channels (the CUDA backend runs it first) widens nothing in YOLO12n: the same chains after it.
  Graph padded = before;
  CHECK(yolo12::graph::pad_channels(padded).empty());
  yolo12::graph::fuse_conv_chains(padded);
  CHECK(dump(padded) == dump(g));
}

TEST_CASE("fuse_conv_chains' limits: links, channel multiple, channels, weights", "[graph][chains]") {
  const Graph before = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  auto fused = [&](const ChainLimits& lim) {
    Graph g = before;
    const int n = yolo12::graph::fuse_conv_chains(g, lim);
    CHECK(n == static_cast<int>(chains(g).size()));
    check_fused(before, g);
    return g;
  };
  SECTION("two links: proj + mlp.0, then mlp.1 + the next qkv (mlp.1 alone in an A2C2f's last block)") {
    ChainLimits lim;
    lim.max_links = 2;
    const Graph g = fused(lim);
    CHECK(chains(g).size() == 2 + 8 + 6 + 3 + 3);  // cv1 + qkv, proj + mlp.0, mlp.1 + qkv, the head's cv1s, Detect
    const std::string p = "model.6.m.0.0";
    const ConvChainOp& a = op_named(g, p + ".attn.proj + " + p + ".mlp.0").get<ConvChainOp>();
    CHECK(chain_str(a) == "64->64->128 stored 11 residual -1 -1");  // proj's output: mlp.1 is outside now
    const ConvChainOp& b = op_named(g, p + ".mlp.1 + model.6.m.0.1.attn.qkv").get<ConvChainOp>();
    CHECK(chain_str(b) == "128->64->192 stored 11 residual -1 -1");  // proj's output from memory
    CHECK(b.links[0].residual.value == a.links[0].out.value);
    CHECK(op_named(g, "model.6.m.1.1.mlp.1").get_if<ConvOp>());
  }
  SECTION("channel multiple 32: not Detect's 80-channel convs, not model.14's 16-channel C3k") {
    ChainLimits lim;
    lim.channel_multiple = 32;
    const Graph g = fused(lim);
    REQUIRE(chains(g).size() == 12);
    for (const Op* op : chains(g)) CHECK(op->name.find("model.21") == std::string::npos);
    for (const Op* op : chains(g)) CHECK(op->name.find("model.14") == std::string::npos);
  }
  SECTION("at most 128 channels: model.6's blocks without the 192-channel qkv, none in model.8") {
    ChainLimits lim;
    lim.max_channels = 128;
    const Graph g = fused(lim);
    REQUIRE(chains(g).size() == 4 + 3);
    CHECK(chain_str(chains(g)[0]->get<ConvChainOp>()) == "64->64->128->64 stored 001 residual -1 -1 0");
    CHECK(chains(g)[0]->name == ablock_chain("model.6.m.0.0", ""));
    for (const Op* op : chains(g)) CHECK(op->name.find("model.8") == std::string::npos);
  }
  SECTION("at most 64 * 64 + 64 * 128 weights: model.6's proj + mlp.0, and model.14's cv1 + C3k cv1") {
    ChainLimits lim;
    lim.max_weights = 64 * 64 + 64 * 128;
    const Graph g = fused(lim);
    REQUIRE(chains(g).size() == 5);
    for (const Op* op : chains(g)) {
      if (op->name == "model.14.cv1 + model.14.m.0.cv1") {  // 256 * 32 + 32 * 16
        CHECK(chain_str(op->get<ConvChainOp>()) == "256->32->16 stored 11 residual -1 -1");
        continue;
      }
      CHECK(chain_str(op->get<ConvChainOp>()) == "64->64->128 stored 11 residual -1 -1");
      CHECK(op->name.rfind("model.6.m.", 0) == 0);
    }
  }
  SECTION("one link, or channels no conv has: nothing, the graph unchanged") {
    for (const int case_ : {0, 1, 2}) {
      ChainLimits lim;
      if (case_ == 0) lim.max_links = 1;
      if (case_ == 1) lim.channel_multiple = 1024;
      if (case_ == 2) lim.max_weights = 1;
      Graph g = before;
      CHECK(yolo12::graph::fuse_conv_chains(g, lim) == 0);
      CHECK(dump(g) == dump(before));
    }
    ChainLimits zero;
    zero.channel_multiple = 0;
    Graph g = before;
    CHECK_THROWS_AS(yolo12::graph::fuse_conv_chains(g, zero), yolo12::OptionError);
  }
}

namespace {

// A hand-made graph (6 x 5 maps, channels multiples of 16): values and convs as a test wants them.
struct HandGraph {
  Graph g;
  HandGraph() { value("input", 3); }
  int value(const std::string& name, int c) {
    g.values.push_back({name, c, 6, 5});
    return static_cast<int>(g.values.size()) - 1;
  }
  ValueRef whole(int v) const { return ValueRef{v, 0, g.values[static_cast<std::size_t>(v)].c}; }
  // A conv `name` from in to a new whole value of c_out channels (or into `out`); returns its output.
  ValueRef conv(const std::string& name, const ValueRef& in, int c_out, const ValueRef& residual = {},
                ValueRef out = {}, int k = 1) {
    if (!out.valid()) out = whole(value(name, c_out));
    ConvOp c;
    c.attrs = yolo12::graph::ConvAttrs{in.c, out.c, k, 1, k / 2, 1, 1, yolo12::graph::Act::SiLU};
    c.in = in;
    c.out = out;
    c.residual = residual;
    c.weight = name + ".weight";
    c.bias = name + ".bias";
    g.ops.push_back(Op{name, c});
    return out;
  }
  // A depthwise k x k conv `name` of `in` (stride 1, pad k / 2 unless given) into a new whole value.
  ValueRef dwconv(const std::string& name, const ValueRef& in, int k, const ValueRef& residual = {}, int stride = 1) {
    const ValueRef out = conv(name, in, in.c, residual, {}, k);
    yolo12::graph::ConvAttrs& a = std::get<ConvOp>(g.ops.back().op).attrs;
    a.groups = in.c;
    a.stride = stride;
    a.act = yolo12::graph::Act::None;
    return out;
  }
  // The fused graph's chains as "name: widths stored residual".
  std::vector<std::string> fused(int expect_chains, const ChainLimits& lim = {}) const {
    Graph f = g;
    CHECK(yolo12::graph::fuse_conv_chains(f, lim) == expect_chains);
    check_fused(g, f);
    std::vector<std::string> v;
    for (const Op* op : chains(f)) v.push_back(op->name + ": " + chain_str(op->get<ConvChainOp>()));
    return v;
  }
};

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("fuse_conv_chains' rules on hand-made graphs", "[graph][chains]") {
  SECTION("whole values link; a residual from an earlier link's whole output, from memory, or none") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);  // 3x3: no link
    const ValueRef a = h.conv("a", in, 32, in);
    const ValueRef b = h.conv("b", a, 64);
    const ValueRef c = h.conv("c", b, 32, a);
    h.g.outputs = {h.conv("d", c, 32, in)};
    CHECK(h.fused(1) == Lines{"a + b + c + d: 32->32->64->32->32 stored 0001 residual -1 -1 0 -1"});
  }
  SECTION("a link's slice of a concat buffer links to the conv that reads exactly it, and may be its residual") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);
    const int cat = h.value("cat", 64);
    const ValueRef half{cat, 0, 32};
    h.conv("a", in, 32, {}, half);               // a writes the concat's first half (as A2C2f's cv1) ...
    const ValueRef b = h.conv("b", half, 32, half);  // ... which b reads, and adds
    h.conv("c", b, 32, {}, ValueRef{cat, 32, 32}, 3);  // the other half: 3x3, no link
    h.g.outputs = {h.whole(cat)};
    CHECK(h.fused(1) == Lines{"a + b: 32->32->32 stored 11 residual -1 0"});
  }
  SECTION("a depthwise conv links as link 0 only, at stride 1, within max_depthwise_k") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);
    const ValueRef pe = h.dwconv("pe", in, 7, in);   // link 0: the pe conv with its residual
    const ValueRef a = h.conv("a", pe, 32, in);
    const ValueRef d = h.dwconv("d", a, 3);          // not after link 0: ends the chain, starts the next
    const ValueRef b = h.conv("b", d, 32);
    const ValueRef e = h.dwconv("e", b, 9);          // 9 x 9 > max_depthwise_k 7: no link
    const ValueRef f = h.conv("f", e, 32);
    const ValueRef s2 = h.dwconv("s2", f, 3, {}, 2);  // stride 2: no link (the shapes do not matter here)
    h.conv("g", s2, 32);
    ChainLimits lim;
    lim.max_depthwise_k = 7;
    CHECK(h.fused(2, lim) == Lines{"pe + a: 32->32->32 stored 01 residual -1 -1", "d + b: 32->32->32 stored 01 residual -1 -1"});
    CHECK(h.fused(0).empty());  // the default limits take no depthwise conv
  }
  SECTION("a residual that is a slice of a link's output ends the chain before its link") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);
    const ValueRef a = h.conv("a", in, 64);
    const ValueRef b = h.conv("b", a, 32);
    h.conv("c", b, 32, ValueRef{a.value, 32, 32});
    CHECK(h.fused(1) == Lines{"a + b: 32->64->32 stored 11 residual -1 -1"});  // c (outside) reads a's output
  }
  SECTION("a sliced read, a value with two writers, an op in between, other convs end a chain") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);
    const ValueRef a = h.conv("a", in, 64);
    const ValueRef b = h.conv("b", ValueRef{a.value, 0, 32}, 32);  // half of a: b starts the next chain
    const ValueRef c = h.conv("c", b, 32);
    // v is written whole by e but also in part by d: e's reader f cannot link to e.
    const int v = h.value("v", 32);
    h.conv("d", c, 16, {}, ValueRef{v, 0, 16});
    yolo12::graph::CopyOp copy;  // another op kind between two convs
    copy.in = c;
    copy.out = h.whole(h.value("copied", 32));
    h.g.ops.push_back(Op{"copy", copy});
    h.conv("e", copy.out, 32, {}, h.whole(v));
    const ValueRef f = h.conv("f", h.whole(v), 32);
    const ValueRef g = h.conv("g", f, 32);
    std::get<ConvOp>(h.g.ops.back().op).attrs.groups = 2;  // grouped: no link
    const ValueRef i = h.conv("i", g, 32);
    std::get<ConvOp>(h.g.ops.back().op).attrs.stride = 2;  // strided: no link (the graph's shapes do not matter here)
    const ValueRef j = h.conv("j", i, 48);
    h.conv("k", j, 16);
    CHECK(h.fused(2) == Lines{"b + c + d: 32->32->32->16 stored 011 residual -1 -1 -1",
                              "j + k: 32->48->16 stored 01 residual -1 -1"});
  }
  SECTION("no link writes over what the chain reads from memory") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 64, {}, {}, 3);
    const ValueRef a = h.conv("a", ValueRef{in.value, 0, 32}, 32);
    h.conv("b", a, 32, {}, ValueRef{in.value, 32, 32});  // beside a's input (as a C2f bottleneck's chunks): links
    const ValueRef c = h.conv("c", ValueRef{in.value, 32, 32}, 32);
    const ValueRef r = h.conv("r", c, 32);
    h.conv("d", r, 32, {}, ValueRef{in.value, 0, 32});  // beside c's input: links
    const ValueRef e = h.conv("e", ValueRef{in.value, 0, 32}, 32);
    h.conv("f", e, 32, {}, ValueRef{in.value, 16, 32});  // over e's input: no link
    const ValueRef q = h.conv("q", in, 32, {}, {}, 3);
    const ValueRef g = h.conv("g", c, 32, q);  // q's output as a residual from memory ...
    h.conv("h", g, 32, {}, q);                 // ... overwritten by the next conv: no link
    CHECK(h.fused(2) == Lines{"a + b: 32->32->32 stored 01 residual -1 -1",
                              "c + r + d: 32->32->32->32 stored 101 residual -1 -1 -1"});
  }
  SECTION("an output something after the chain, a graph output or the head reads is stored") {
    HandGraph h;
    const ValueRef in = h.conv("stem", h.whole(0), 32, {}, {}, 3);
    const ValueRef a = h.conv("a", in, 32);
    const ValueRef b = h.conv("b", a, 32);
    const ValueRef c = h.conv("c", b, 32);
    const ValueRef d = h.conv("d", c, 32);
    h.conv("e", d, 32, {}, {}, 3);  // not a link: reads d
    h.conv("after", in, 32, a, {}, 3);
    h.g.head.detect.cls = {b};
    h.g.outputs = {ValueRef{c.value, 0, 16}};
    CHECK(h.fused(1) == Lines{"a + b + c + d: 32->32->32->32->32 stored 1111 residual -1 -1 -1 -1"});
    ChainLimits lim;
    lim.max_links = 3;
    CHECK(h.fused(1, lim) == Lines{"a + b + c: 32->32->32->32 stored 111 residual -1 -1 -1"});
  }
}

TEST_CASE("fuse_conv_chains with depthwise first links (the CUDA backend's limits): yolo12n's pe and Detect's 3x3s",
          "[graph][chains]") {
  const Graph before = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph g = before;
  ChainLimits lim;
  lim.max_depthwise_k = 7;
  REQUIRE(yolo12::graph::fuse_conv_chains(g, lim) == 19);
  CHECK(g.ops.size() == 85);
  check_fused(before, g);
  // The ABlock: pe (7x7, + the attention output from memory) -> proj (+ the block input) -> mlp.0 -> mlp.1 (+ proj's
  // output) -> the next block's qkv: five links, proj's residual link now 1.
  const std::string p = "model.6.m.0.0";
  const ConvChainOp& ab =
      op_named(g, p + ".attn.pe + " + ablock_chain(p, "model.6.m.0.1")).get<ConvChainOp>();
  CHECK(chain_str(ab) == "64->64->64->128->64->192 stored 00011 residual -1 -1 -1 1 -1");
  CHECK(yolo12::graph::chain_depthwise(ab.links[0].attrs));
  CHECK(ab.links[0].attrs.k == 7);
  CHECK(ab.links[0].residual.valid());
  CHECK(ab.scratch().size() == 3);  // pe's, proj's and the hidden map
  // Detect's class branch per level: dw 3x3 -> 1x1, then dw 3x3 -> 1x1 -> the last 1x1.
  const ConvChainOp& c0 = op_named(g, "model.21.cv3.0.0.0 + model.21.cv3.0.0.1").get<ConvChainOp>();
  CHECK(chain_str(c0) == "64->64->80 stored 01 residual -1 -1");
  const ConvChainOp& c1 =
      op_named(g, "model.21.cv3.0.1.0 + model.21.cv3.0.1.1 + model.21.cv3.0.2").get<ConvChainOp>();
  CHECK(chain_str(c1) == "80->80->80->80 stored 001 residual -1 -1 -1");
  int dw = 0;
  for (const Op* op : chains(g)) dw += yolo12::graph::chain_depthwise(op->get<ConvChainOp>().links[0].attrs) ? 1 : 0;
  CHECK(dw == 14);  // 8 ABlocks' pe, 6 Detect 3x3s
}

TEST_CASE("the CPU backend checks a chain when it binds it: ModelError naming the op", "[graph][chains][cpu]") {
  Graph g = yolo12::graph::build_graph(yolo12n_header(), 320, 320);
  REQUIRE(yolo12::graph::fuse_conv_chains(g) == 16);
  const Op& first = *chains(g)[1];  // the first ABlock's four links
  REQUIRE(first.get<ConvChainOp>().attrs.links == 4);
  const yolo12::cpu::CpuWeights no_weights;  // the chain is checked before its weights are looked up
  auto bind_error = [&](void (*corrupt)(ConvChainOp&)) {
    Op op = first;
    corrupt(std::get<ConvChainOp>(op.op));
    try {
      yolo12::cpu::bind_op(op, yolo12::cpu::BindContext{g, no_weights, op.name});
    } catch (const yolo12::ModelError& e) {
      return std::string(e.what());
    }
    return std::string("no ModelError");
  };
  const std::vector<std::pair<void (*)(ConvChainOp&), std::string>> broken = {
      {[](ConvChainOp& c) { c.attrs.links = 3; }, "attrs say 3 links, the op holds 4"},
      {[](ConvChainOp& c) { c.links.resize(1), c.attrs.links = 1; }, "1 links (2..5)"},
      {[](ConvChainOp& c) { c.links[2].in = c.links[0].in; }, "link 2 does not read exactly the output of link 1"},
      {[](ConvChainOp& c) {  // link 1 writes the first half of its value, link 2 reads the second half
         c.links[1].out.c = c.links[1].attrs.c_out = c.links[2].in.c = c.links[2].attrs.c_in = 64;
         c.links[2].in.c0 = 64;
       },
       "link 2 does not read exactly the output of link 1"},
      {[](ConvChainOp& c) { c.attrs.residual_link[2] = 2; }, "link 2: residual_link 2 is not an earlier link"},
      {[](ConvChainOp& c) { c.attrs.residual_link[2] = 1; }, "residual_link 1 but its residual is not that link's"},
      {[](ConvChainOp& c) { c.attrs.stored[3] = false; }, "the last link's output is not stored"},
      {[](ConvChainOp& c) { c.links[1].attrs.k = 3; }, "link 1: not a 1x1 conv"},
      {[](ConvChainOp& c) { c.links[0].attrs.k = 3; }, "link 0: neither a 1x1 conv"},
  };
  for (const auto& [corrupt, message] : broken) {
    const std::string what = bind_error(corrupt);
    INFO(what);
    CHECK(what.find(first.name) != std::string::npos);
    CHECK(what.find(message) != std::string::npos);
  }
  CHECK(bind_error([](ConvChainOp&) {}).find("tensor") != std::string::npos);  // intact: on to the weights
}

namespace {

// The raw head and every value after a forward of `g` on the CPU, every value kept (keep_values).
struct CpuRun {
  std::vector<float> raw;
  std::vector<std::vector<float>> values;
};
CpuRun run_cpu(const std::shared_ptr<const yolo12::cpu::CpuWeights>& w, Graph g, const std::vector<float>& x,
               int batch) {
  const std::vector<yolo12::graph::Lifetime> life = yolo12::graph::value_lifetimes(g);
  yolo12::cpu::CpuExecutor exec(w, std::move(g), batch, 2, /*keep_values=*/true);
  CpuRun r;
  r.raw.assign(static_cast<std::size_t>(batch) * exec.channels() * exec.anchors(), 0.f);
  exec.forward(x.data(), batch, r.raw.data());
  r.values.resize(life.size());
  for (std::size_t v = 1; v < life.size(); ++v)
    if (life[v].first != yolo12::graph::Lifetime::kUnused) r.values[v] = exec.value(static_cast<int>(v), batch);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// tests/data/<checkpoint> exported (python3 + numpy), the bus input at 320 x 320 and, as a second image, the same
// mirrored; "" and why where it cannot be had.
std::string fixture(const std::string& checkpoint, std::vector<float>& two, std::string& why) {
  const std::string y12 = t::export_model(t::test_data_dir() + "/" + checkpoint, checkpoint, why);
  if (y12.empty()) return y12;
  const t::NpyArray x = t::load_npy_any(t::test_data_dir() + "/input_bus_320.npy.gz");
  REQUIRE(x.shape == std::vector<long long>{1, 3, 320, 320});
  const std::size_t image = x.data.size();
  two.assign(2 * image, 0.f);
  std::copy(x.data.begin(), x.data.end(), two.begin());
  for (std::size_t row = 0; row < 3 * 320; ++row)
    for (std::size_t col = 0; col < 320; ++col) two[image + row * 320 + col] = x.data[row * 320 + 319 - col];
  return y12;
}

// The fused graph's CPU results against the unfused graph's: the raw head and every value (scratch values too:
// the CPU writes them as the plain convs did), bit for bit.
void check_bit_identical(const std::string& model, const std::string& y12, const std::vector<float>& x,
                         const ChainLimits& lim, int expect_chains) {
  const auto file = yolo12::model::ModelFile::open(y12);
  const auto weights = yolo12::cpu::load_weights(*file);
  const Graph plain = yolo12::graph::build_graph(file->header(), 320, 320);
  Graph fused = plain;
  REQUIRE(yolo12::graph::fuse_conv_chains(fused, lim) == expect_chains);
  check_fused(plain, fused);
  const CpuRun want = run_cpu(weights, plain, x, 2);
  const CpuRun got = run_cpu(weights, fused, x, 2);
  CHECK(same_bits(got.raw, want.raw));
  std::size_t values = 0, differ = 0;
  for (std::size_t v = 1; v < want.values.size(); ++v) {
    if (want.values[v].empty()) continue;
    ++values;
    if (!same_bits(got.values[v], want.values[v])) {
      ++differ;
      UNSCOPED_INFO("value " << plain.values[v].name << " differs");
    }
  }
  CHECK(differ == 0);
  double sum = 0;
  for (float f : got.raw) sum += std::fabs(f);
  CHECK(sum > 0);
  std::printf("fuse_conv_chains, %s 320x320 batch 2: %d chains, %zu ops -> %zu, raw head and %zu values bit-identical "
              "on the CPU: %s\n", model.c_str(), expect_chains, plain.ops.size(), fused.ops.size(), values,
              differ == 0 && same_bits(got.raw, want.raw) ? "yes" : "NO");
}

}  // namespace

TEST_CASE("the CPU executor gives bit-identical results on yolo12n's fused graph", "[graph][chains][cpu]") {
  std::vector<float> x;
  std::string why;
  const std::string y12 = fixture("yolo12n_rand.pt", x, why);
  YOLO12_SKIP_IF(y12.empty(), why);
  check_bit_identical("yolo12n_rand", y12, x, ChainLimits{}, 16);
  ChainLimits two;  // other cuts through the same convs
  two.max_links = 2;
  check_bit_identical("yolo12n_rand (max_links 2)", y12, x, two, 22);
  ChainLimits dw;  // the CUDA backend's: depthwise first links too
  dw.max_depthwise_k = 7;
  check_bit_identical("yolo12n_rand (depthwise first links)", y12, x, dw, 19);
}

TEST_CASE("yolo12l_narrow: bit-identical on the CPU; after pad_channels the same chains with widened links",
          "[graph][chains][cpu]") {
  std::vector<float> x;
  std::string why;
  const std::string y12 = fixture("yolo12l_narrow_rand.pt", x, why);
  YOLO12_SKIP_IF(y12.empty(), why);
  // Its A2C2f MLPs are 64 -> 76 -> 64 (int(64 * 1.2)): chains of 76-channel links on the CPU at multiples of 4, ...
  ChainLimits by4;
  by4.channel_multiple = 4;
  check_bit_identical("yolo12l_narrow_rand (multiples of 4)", y12, x, by4, 27);
  Graph plain = yolo12::graph::build_graph(yolo12::model::ModelFile::open(y12)->header(), 320, 320);
  Graph unpadded = plain;
  REQUIRE(yolo12::graph::fuse_conv_chains(unpadded, by4) == 27);
  Graph some = plain;  // ... at the default multiple of 16 only the chains without a 76-channel link, ...
  CHECK(yolo12::graph::fuse_conv_chains(some) == 10);
  for (const Op* op : chains(some)) CHECK(op->name.find("attn.proj") == std::string::npos);
  // ... and, as the CUDA backend runs it, pad_channels widens the hidden maps to 80, then the ABlock chains form too.
  Graph padded = plain;
  CHECK(yolo12::graph::pad_channels(padded).size() == 16);
  const Graph widened = padded;
  REQUIRE(yolo12::graph::fuse_conv_chains(padded) == 26);
  check_fused(widened, padded);
  auto ablocks = [](const Graph& g) {  // the chains through an ABlock's MLP (the widened links)
    std::vector<const Op*> v;
    for (const Op* op : chains(g))
      if (op->name.find("attn.proj") != std::string::npos) v.push_back(op);
    return v;
  };
  const std::vector<const Op*> a = ablocks(unpadded), b = ablocks(padded);
  REQUIRE(a.size() == 16);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(b[i]->name);
    CHECK(a[i]->name == b[i]->name);
    const ConvChainOp& p = b[i]->get<ConvChainOp>();
    std::string s = chain_str(a[i]->get<ConvChainOp>());
    CHECK(chain_str(p) == s.replace(s.find("->76->"), 6, "->80->"));
    CHECK(p.links[1].attrs.c_out == 80);  // mlp.0: 64 -> 76 stored, widened to 80
    CHECK(p.links[1].tensor_c_out() == 76);
    CHECK(p.links[2].attrs.c_in == 80);
    CHECK(p.links[2].tensor_c_in() == 76);
  }
  // The CPU refuses widened convs, in a chain too.
  const auto weights = yolo12::cpu::load_weights(*yolo12::model::ModelFile::open(y12));
  CHECK_THROWS_WITH(yolo12::cpu::CpuExecutor(weights, padded, 1, 1),
                    Catch::Contains("was widened by graph::pad_channels"));
}

// ---- graph::fuse_stride2_pairs: the stem and the conv after it ---------------------------------------------------

TEST_CASE("fuse_stride2_pairs on YOLO12n at 640: the stem and the conv after it, nothing else", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph g = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(g) == 1);
  check_fused(plain, g);
  CHECK(g.ops.size() + 1 == plain.ops.size());
  const std::vector<const Op*> found = chains(g);
  REQUIRE(found.size() == 1);
  const auto& pair = found[0]->get<ConvChainOp>();
  CHECK(yolo12::graph::chain_stride2_pair(pair));
  CHECK(found[0]->name == plain.ops[0].name + " + " + plain.ops[1].name);
  CHECK(chain_str(pair) == "3->16->32 stored 01 residual -1 -1");
  CHECK(pair.links[0].in.value == Graph::kInputValue);
  CHECK(pair.scratch().size() == 1);  // the stem's map: nothing after the pair reads it
  // The other stride-2 convs (model.3, .5, .7, Detect's downsampling) follow other ops: left alone, and the pass
  // leaves a fused graph as it is.
  Graph again = g;
  CHECK(yolo12::graph::fuse_stride2_pairs(again) == 0);
  CHECK(dump(again) == dump(g));
  // With the 1x1 chains too, in the CUDA backend's order: the same pair, the same chains as without it.
  Graph chained = plain;
  const int alone = yolo12::graph::fuse_conv_chains(chained);
  Graph both = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(both) == 1);
  CHECK(yolo12::graph::fuse_conv_chains(both) == alone);
  check_fused(plain, both);
}

TEST_CASE("fuse_stride2_pairs with a filter: only the pairs it accepts, and it sees the two convs", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  std::vector<std::string> seen;
  const auto record = [&](bool answer) {
    return [&seen, answer](const yolo12::graph::ConvAttrs& a, const yolo12::graph::ConvAttrs& b) {
      seen.push_back(std::to_string(a.c_in) + "->" + std::to_string(a.c_out) + "->" + std::to_string(b.c_out));
      return answer;
    };
  };
  Graph refused = plain;
  CHECK(yolo12::graph::fuse_stride2_pairs(refused, record(false)) == 0);
  CHECK(dump(refused) == dump(plain));  // nothing changed
  REQUIRE(seen.size() == 1);           // asked only about the one pair that passes the other rules
  CHECK(seen[0] == "3->16->32");
  seen.clear();
  Graph accepted = plain;
  CHECK(yolo12::graph::fuse_stride2_pairs(accepted, record(true)) == 1);
  Graph unfiltered = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(unfiltered) == 1);
  CHECK(dump(accepted) == dump(unfiltered));
  CHECK(seen.size() == 1);
}

TEST_CASE("fuse_stride2_pairs' rules on YOLO12n's stem, changed by hand", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  REQUIRE(plain.ops.size() > 2);
  const auto fused_count = [](Graph g) { return yolo12::graph::fuse_stride2_pairs(g); };
  const auto changed = [&](auto edit) {
    Graph g = plain;
    edit(g.ops[0].op, g.ops[1].op);
    return g;
  };
  const auto conv0 = [](yolo12::graph::OpVariant& v) -> ConvOp& { return std::get<ConvOp>(v); };
  CHECK(fused_count(changed([&](auto& a, auto&) { conv0(a).attrs.stride = 1; })) == 0);
  CHECK(fused_count(changed([&](auto&, auto& b) { conv0(b).attrs.k = 1; })) == 0);
  CHECK(fused_count(changed([&](auto&, auto& b) { conv0(b).attrs.pad = 0; })) == 0);
  CHECK(fused_count(changed([&](auto&, auto& b) { conv0(b).attrs.groups = 2; })) == 0);
  CHECK(fused_count(changed([&](auto&, auto& b) { conv0(b).residual = conv0(b).in; })) == 0);
  CHECK(fused_count(changed([&](auto&, auto& b) { conv0(b).in.c -= 1; })) == 0);  // not exactly link 0's slice
  // Something else reads the stem's map: still a pair, with the map stored (the CUDA backend then runs the links).
  Graph read_twice = plain;
  const ValueRef map = std::get<ConvOp>(read_twice.ops[0].op).out;
  read_twice.outputs.push_back(map);
  REQUIRE(yolo12::graph::fuse_stride2_pairs(read_twice) == 1);
  CHECK(chain_str(chains(read_twice)[0]->get<ConvChainOp>()) == "3->16->32 stored 11 residual -1 -1");
  // check_conv_chain: a pair with a residual, or whose second link does not read the first's output, is refused.
  Graph g = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(g) == 1);
  const Op& op = *chains(g)[0];
  ConvChainOp bad = op.get<ConvChainOp>();
  bad.links[1].residual = bad.links[1].out;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(g, bad, op.name), yolo12::ModelError);
  bad = op.get<ConvChainOp>();
  bad.links[1].in = bad.links[0].in;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(g, bad, op.name), yolo12::ModelError);
  bad = op.get<ConvChainOp>();
  bad.attrs.stored[1] = false;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(g, bad, op.name), yolo12::ModelError);
}


// ---- graph::fuse_stride1_pairs: a bottleneck's two 3x3 convs -------------------------------------------------------

TEST_CASE("fuse_stride1_pairs on YOLO12n at 640: every bottleneck's cv1 + cv2, and Detect's box convs",
          "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph g = plain;
  const int made = yolo12::graph::fuse_stride1_pairs(g);
  check_fused(plain, g);
  CHECK(g.ops.size() + static_cast<std::size_t>(made) == plain.ops.size());
  const std::vector<const Op*> found = chains(g);
  REQUIRE(static_cast<int>(found.size()) == made);
  std::printf("fuse_stride1_pairs, yolo12n 640x640: %zu ops -> %zu, %d pairs\n", plain.ops.size(), g.ops.size(), made);
  std::vector<std::string> bottlenecks, detect;
  for (const Op* op : found) {
    const auto& pair = op->get<ConvChainOp>();
    INFO(op->name);
    CHECK(yolo12::graph::chain_stride1_pair(pair));
    CHECK_FALSE(yolo12::graph::chain_stride2_pair(pair));
    CHECK(pair.scratch().size() == 1);  // the first conv's map: nothing after the pair reads it
    std::printf("  %-60s %s\n", op->name.c_str(), chain_str(pair).c_str());
    if (op->name.find(".cv1 + ") != std::string::npos) {
      // A bottleneck: cv2 adds the pair's input (its shortcut), from memory.
      CHECK(pair.links[1].residual.value == pair.links[0].in.value);
      CHECK(pair.links[1].residual.c0 == pair.links[0].in.c0);
      CHECK(pair.links[1].residual.c == pair.links[0].in.c);
      bottlenecks.push_back(chain_str(pair));
    } else {
      // Detect's box branch per level: Conv 3x3, Conv 3x3, no residual.
      CHECK(op->name.rfind("model.21.cv2.", 0) == 0);
      CHECK_FALSE(pair.links[1].residual.valid());
      detect.push_back(chain_str(pair));
    }
  }
  // The backbone's C3k2 bottlenecks at 160x160 and 80x80 (e 0.5); the head's C3k bottlenecks (e 1.0) at 40x40, 80x80,
  // 40x40 and 20x20; Detect's box convs at the three levels.
  const std::multiset<std::string> got(bottlenecks.begin(), bottlenecks.end());
  CHECK(bottlenecks.size() == 10);
  CHECK(got.count("16->8->16 stored 01 residual -1 -1") == 1);
  CHECK(got.count("32->16->32 stored 01 residual -1 -1") == 1);
  CHECK(got.count("16->16->16 stored 01 residual -1 -1") == 2);
  CHECK(got.count("32->32->32 stored 01 residual -1 -1") == 4);
  CHECK(got.count("64->64->64 stored 01 residual -1 -1") == 2);
  CHECK(detect == std::vector<std::string>{"64->64->64 stored 01 residual -1 -1", "128->64->64 stored 01 residual -1 -1",
                                           "256->64->64 stored 01 residual -1 -1"});
  // With the CUDA backend's filter (8-32 channels): the same minus the wider ones.
  Graph filtered = plain;
  const int narrow = yolo12::graph::fuse_stride1_pairs(filtered, [](const auto& a, const auto& b) {
    return a.c_in <= 32 && a.c_out <= 32 && b.c_out <= 32;
  });
  CHECK(narrow == 8);
  check_fused(plain, filtered);
  // Deterministic, and nothing left to fuse in a fused graph; the stem pair and the 1x1 chains as before.
  Graph again = g;
  CHECK(yolo12::graph::fuse_stride1_pairs(again) == 0);
  CHECK(dump(again) == dump(g));
  Graph all = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(all) == 1);
  CHECK(yolo12::graph::fuse_stride1_pairs(all) == made);
  Graph chained = plain;
  const int alone = yolo12::graph::fuse_conv_chains(chained);
  CHECK(yolo12::graph::fuse_conv_chains(all) == alone);
  check_fused(plain, all);
}

TEST_CASE("fuse_stride1_pairs' rules on YOLO12n's first bottleneck, changed by hand", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph fused = plain;
  REQUIRE(yolo12::graph::fuse_stride1_pairs(fused) > 0);
  const std::string first_name = chains(fused)[0]->name;
  const std::string cv1 = first_name.substr(0, first_name.find(" + "));
  std::size_t at = 0;
  while (plain.ops[at].name != cv1) ++at;
  REQUIRE(at + 1 < plain.ops.size());
  const auto pairs_at = [&](auto edit) {  // whether the pair at `at` is still made after the edit
    Graph g = plain;
    edit(std::get<ConvOp>(g.ops[at].op), std::get<ConvOp>(g.ops[at + 1].op));
    yolo12::graph::fuse_stride1_pairs(g);
    return g.ops[at].get_if<ConvChainOp>() != nullptr;
  };
  CHECK(pairs_at([](ConvOp&, ConvOp&) {}));
  CHECK_FALSE(pairs_at([](ConvOp& a, ConvOp&) { a.attrs.stride = 2; }));
  CHECK_FALSE(pairs_at([](ConvOp&, ConvOp& b) { b.attrs.k = 1; }));
  CHECK_FALSE(pairs_at([](ConvOp&, ConvOp& b) { b.attrs.dilation = 2; }));
  CHECK_FALSE(pairs_at([](ConvOp&, ConvOp& b) { b.attrs.groups = 2; }));
  CHECK_FALSE(pairs_at([](ConvOp& a, ConvOp&) { a.residual = a.out; }));         // cv1 with a residual
  CHECK_FALSE(pairs_at([](ConvOp& a, ConvOp& b) { b.residual = a.out; }));       // cv2's residual is the map
  CHECK_FALSE(pairs_at([](ConvOp&, ConvOp& b) { b.in.c -= 1; }));                 // not exactly cv1's slice
  CHECK_FALSE(pairs_at([](ConvOp& a, ConvOp& b) { b.out = a.in; }));             // cv2 writes over cv1's input
  CHECK(pairs_at([](ConvOp&, ConvOp& b) { b.residual = ValueRef{}; }));          // no residual: still a pair
  // The filter sees the two convs; refused, nothing changes.
  Graph refused = plain;
  CHECK(yolo12::graph::fuse_stride1_pairs(refused, [](const auto&, const auto&) { return false; }) == 0);
  CHECK(dump(refused) == dump(plain));
  // check_conv_chain refuses a pair whose first link has a residual, or whose residual overlaps the map.
  const Op& op = *chains(fused)[0];
  ConvChainOp bad = op.get<ConvChainOp>();
  bad.links[0].residual = bad.links[1].out;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(fused, bad, op.name), yolo12::ModelError);
  bad = op.get<ConvChainOp>();
  bad.links[1].residual = bad.links[0].out;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(fused, bad, op.name), yolo12::ModelError);
  bad = op.get<ConvChainOp>();
  bad.links[1].in = bad.links[0].in;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(fused, bad, op.name), yolo12::ModelError);
  REQUIRE_NOTHROW(yolo12::graph::check_conv_chain(fused, op.get<ConvChainOp>(), op.name));
}

TEST_CASE("the CPU executor gives bit-identical results on yolo12n with its pairs and class branches fused",
          "[graph][chains][cpu]") {
  std::vector<float> x;
  std::string why;
  const std::string y12 = fixture("yolo12n_rand.pt", x, why);
  YOLO12_SKIP_IF(y12.empty(), why);
  const auto file = yolo12::model::ModelFile::open(y12);
  const auto weights = yolo12::cpu::load_weights(*file);
  const Graph plain = yolo12::graph::build_graph(file->header(), 320, 320);
  const CpuRun want = run_cpu(weights, plain, x, 2);
  double sum = 0;
  for (float f : want.raw) sum += std::fabs(f);
  CHECK(sum > 0);
  // The stem pair, the bottleneck pairs, both, Detect's class branches, and all three.
  for (int passes : {1, 2, 3, 4, 7}) {
    INFO("passes " << passes);
    Graph fused = plain;
    if (passes & 1) REQUIRE(yolo12::graph::fuse_stride2_pairs(fused) == 1);
    if (passes & 2) REQUIRE(yolo12::graph::fuse_stride1_pairs(fused) > 0);
    if (passes & 4) REQUIRE(yolo12::graph::fuse_dw_branches(fused) == 3);
    CHECK(same_bits(run_cpu(weights, fused, x, 2).raw, want.raw));
  }
}

// ---- graph::fuse_dw_branches: Detect's class branch -----------------------------------------------------------------

TEST_CASE("fuse_dw_branches on YOLO12n at 640: Detect's class branch at each level, nothing else", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  Graph g = plain;
  const int made = yolo12::graph::fuse_dw_branches(g);
  check_fused(plain, g);
  CHECK(made == 3);
  CHECK(g.ops.size() + 4u * static_cast<std::size_t>(made) == plain.ops.size());
  const std::vector<const Op*> found = chains(g);
  REQUIRE(static_cast<int>(found.size()) == made);
  std::vector<std::string> got;
  for (const Op* op : found) {
    const auto& branch = op->get<ConvChainOp>();
    INFO(op->name);
    CHECK(op->name.rfind("model.21.cv3.", 0) == 0);
    CHECK(yolo12::graph::chain_dw_branch(branch));
    CHECK_FALSE(yolo12::graph::chain_stride1_pair(branch));
    CHECK(branch.scratch().size() == 4);  // the four maps: nothing after the branch reads them
    CHECK(branch.writes().size() == 1);   // the classes, which the head reads
    REQUIRE_NOTHROW(yolo12::graph::check_conv_chain(g, branch, op->name));
    got.push_back(chain_str(branch));
    std::printf("  %-60s %s\n", op->name.c_str(), chain_str(branch).c_str());
  }
  CHECK(got == std::vector<std::string>{"64->64->80->80->80->80 stored 00001 residual -1 -1 -1 -1 -1",
                                        "128->128->80->80->80->80 stored 00001 residual -1 -1 -1 -1 -1",
                                        "256->256->80->80->80->80 stored 00001 residual -1 -1 -1 -1 -1"});
  // The filter sees the five convs (the CUDA backend's: at most 128 channels in); refused, nothing changes.
  Graph filtered = plain;
  CHECK(yolo12::graph::fuse_dw_branches(filtered, [](const std::vector<yolo12::graph::ConvAttrs>& l) {
          return l.size() == 5 && l[0].c_in <= 128;
        }) == 2);
  Graph refused = plain;
  CHECK(yolo12::graph::fuse_dw_branches(refused, [](const auto&) { return false; }) == 0);
  CHECK(dump(refused) == dump(plain));
  // Deterministic, nothing left in a fused graph, and the other passes still find theirs.
  Graph again = g;
  CHECK(yolo12::graph::fuse_dw_branches(again) == 0);
  CHECK(dump(again) == dump(g));
  Graph all = plain;
  REQUIRE(yolo12::graph::fuse_stride2_pairs(all) == 1);
  const int pairs = yolo12::graph::fuse_stride1_pairs(all);
  CHECK(pairs > 0);
  CHECK(yolo12::graph::fuse_dw_branches(all) == 3);
  check_fused(plain, all);
  // A chain check: a branch with a residual, or a link reading something else, is refused.
  const Op& op = *found[0];
  ConvChainOp bad = op.get<ConvChainOp>();
  bad.links[3].residual = bad.links[3].out;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(g, bad, op.name), yolo12::ModelError);
  bad = op.get<ConvChainOp>();
  bad.links[2].in = bad.links[0].in;
  CHECK_THROWS_AS(yolo12::graph::check_conv_chain(g, bad, op.name), yolo12::ModelError);
}

TEST_CASE("fuse_dw_branches' rules on YOLO12n's P3 class branch, changed by hand", "[graph][chains]") {
  const Graph plain = yolo12::graph::build_graph(yolo12n_header(), 640, 640);
  std::size_t at = 0;
  while (at < plain.ops.size() && plain.ops[at].name != "model.21.cv3.0.0.0") ++at;
  REQUIRE(at + 4 < plain.ops.size());
  const auto fused_at = [&](auto edit) {  // whether the branch at `at` is still made after the edit
    Graph g = plain;
    ConvOp* c[5];
    for (int k = 0; k < 5; ++k) c[k] = &std::get<ConvOp>(g.ops[at + static_cast<std::size_t>(k)].op);
    edit(c);
    yolo12::graph::fuse_dw_branches(g);
    return g.ops[at].get_if<ConvChainOp>() != nullptr;
  };
  CHECK(fused_at([](ConvOp**) {}));
  CHECK_FALSE(fused_at([](ConvOp** c) { c[0]->attrs.k = 5; c[0]->attrs.pad = 2; }));  // a 5x5 depthwise link
  CHECK_FALSE(fused_at([](ConvOp** c) { c[2]->attrs.groups = 1; }));                  // link 2 not depthwise
  CHECK_FALSE(fused_at([](ConvOp** c) { c[3]->attrs.k = 3; c[3]->attrs.pad = 1; }));  // link 3 not 1x1
  CHECK_FALSE(fused_at([](ConvOp** c) { c[4]->residual = c[0]->in; }));               // a residual
  CHECK_FALSE(fused_at([](ConvOp** c) { c[2]->in.c -= 1; }));                         // not exactly link 1's slice
  CHECK_FALSE(fused_at([](ConvOp** c) { c[4]->out = c[0]->in; }));                    // writes over the input
}
