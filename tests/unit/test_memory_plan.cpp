// The activation-arena planner both executors use: values alive at the same time never share
// memory, dead values' space is reused, and the plan never exceeds one buffer per value.
#include <random>

#include "catch.hpp"
#include "graph/memory_plan.hpp"
#include "model_writer.hpp"

using namespace yolo12::graph;

namespace {

// Every pair of planned values whose lifetimes overlap must occupy disjoint ranges.
void require_disjoint(const std::vector<Lifetime>& life, const std::vector<std::size_t>& size, const ArenaPlan& plan) {
  for (std::size_t a = 0; a < size.size(); ++a) {
    if (!size[a] || life[a].first == Lifetime::kUnused) {
      REQUIRE(plan.offset[a] == ArenaPlan::kNone);
      continue;
    }
    REQUIRE(plan.offset[a] + size[a] <= plan.bytes);
    for (std::size_t b = a + 1; b < size.size(); ++b) {
      if (!size[b] || life[b].first == Lifetime::kUnused || !life[a].overlaps(life[b])) continue;
      INFO("values " << a << " [" << life[a].first << ", " << life[a].last << "] and " << b << " ["
                     << life[b].first << ", " << life[b].last << "]");
      const bool disjoint = plan.offset[a] + size[a] <= plan.offset[b] || plan.offset[b] + size[b] <= plan.offset[a];
      REQUIRE(disjoint);
    }
  }
}

}  // namespace

TEST_CASE("arena plan on random lifetimes", "[plan]") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int nv = 1 + static_cast<int>(rng() % 40), nops = 1 + static_cast<int>(rng() % 30);
    std::vector<Lifetime> life(nv);
    std::vector<std::size_t> size(nv);
    for (int v = 0; v < nv; ++v) {
      if (rng() % 10 == 0) continue;  // unused value
      const int a = static_cast<int>(rng() % nops) - (rng() % 8 == 0 ? 1 : 0), len = static_cast<int>(rng() % 6);
      life[v] = {a, std::min(nops - 1, a + len)};
      size[v] = rng() % 5 == 0 ? 0 : 64 * (1 + rng() % 50);
    }
    const ArenaPlan plan = plan_arena(life, size);
    require_disjoint(life, size, plan);
    std::size_t naive = 0, peak = 0;
    for (int v = 0; v < nv; ++v)
      if (size[v] && life[v].first != Lifetime::kUnused) naive += size[v];
    for (int i = -1; i < nops; ++i) {  // the arena holds at least what is alive at once
      std::size_t alive = 0;
      for (int v = 0; v < nv; ++v)
        if (size[v] && life[v].first != Lifetime::kUnused && life[v].first <= i && i <= life[v].last) alive += size[v];
      peak = std::max(peak, alive);
    }
    REQUIRE(plan.naive_bytes == naive);
    REQUIRE(plan.bytes <= naive);
    REQUIRE(plan.bytes >= peak);
  }
}

TEST_CASE("a chain reuses memory", "[plan]") {
  // v0 -> v1 -> v2 -> v3, each 100 units: at most two are alive at once.
  const std::vector<Lifetime> life = {{0, 0}, {0, 1}, {1, 2}, {2, 3}};
  const std::vector<std::size_t> size = {100, 100, 100, 100};
  const ArenaPlan plan = plan_arena(life, size);
  require_disjoint(life, size, plan);
  REQUIRE(plan.bytes == 200);
  REQUIRE(plan.naive_bytes == 400);
}

TEST_CASE("lifetimes and a plan for a real graph", "[plan]") {
  const auto model = yolo12::test::tiny_model(3, 2);
  const Graph g = build_graph(model.header, 64, 96);
  const std::vector<Lifetime> life = value_lifetimes(g);
  REQUIRE(life.size() == g.values.size());
  // The image is written before op 0 and read by op 0 (the stem): it must outlive op 0, else op 0's
  // output could be placed on top of the image it is reading (a bug the GPU model test once caught).
  REQUIRE(life[Graph::kInputValue].first == -1);
  REQUIRE(life[Graph::kInputValue].last >= 0);
  for (const ValueRef& r : g.outputs)  // the head reads them after the last op
    REQUIRE(life[r.value].last == static_cast<int>(g.ops.size()));
  for (std::size_t i = 0; i < g.ops.size(); ++i)
    for (const ValueRef& r : op_operands(g.ops[i]))
      if (r.valid()) REQUIRE((life[r.value].first <= static_cast<int>(i) && static_cast<int>(i) <= life[r.value].last));
  std::vector<std::size_t> size(g.values.size());
  for (std::size_t v = 0; v < size.size(); ++v) size[v] = static_cast<std::size_t>(g.values[v].c) * g.values[v].h * g.values[v].w;
  const ArenaPlan plan = plan_arena(life, size);
  require_disjoint(life, size, plan);
  REQUIRE(plan.bytes < plan.naive_bytes);
  // Op 0's output never shares memory with the image op 0 reads.
  const Op& first = g.ops.front();
  REQUIRE(first.kind() == OpKind::Conv);
  const int in = first.get<yolo12::graph::ConvOp>().in.value, out = first.get<yolo12::graph::ConvOp>().out.value;
  REQUIRE(in == Graph::kInputValue);
  REQUIRE((plan.offset[in] + size[in] <= plan.offset[out] || plan.offset[out] + size[out] <= plan.offset[in]));
}
