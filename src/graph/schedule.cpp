// graph/schedule.cpp - see schedule.hpp.
#include "graph/schedule.hpp"

#include <algorithm>
#include <string>

#include "yolo12/errors.hpp"

namespace yolo12::graph {
namespace {

struct Access {
  ValueRef ref;
  bool write;
};

std::vector<Access> accesses(const Op& op) {
  return visit_op(op, [](const auto& o) {
    std::vector<Access> r;
    for (const ValueRef& v : o.reads())
      if (v.valid()) r.push_back({v, false});
    for (const ValueRef& v : o.writes())
      if (v.valid()) r.push_back({v, true});
    for (const ValueRef& v : o.scratch())  // written by the op (its contents undefined after it)
      if (v.valid()) r.push_back({v, true});
    return r;
  });
}

// [c0, c1) of a slice; a slice of no channels stands for the whole value.
std::pair<int, int> channels(const Graph& g, const ValueRef& r) {
  if (r.c <= 0) return {0, g.values[static_cast<std::size_t>(r.value)].c};
  return {r.c0, r.c0 + r.c};
}

bool refs_overlap(const Graph& g, const ArenaLayout& layout, const ValueRef& a, const ValueRef& b) {
  if (a.value == b.value) {
    const auto [a0, a1] = channels(g, a);
    const auto [b0, b1] = channels(g, b);
    return a0 < b1 && b0 < a1;
  }
  const auto va = static_cast<std::size_t>(a.value), vb = static_cast<std::size_t>(b.value);
  if (va >= layout.bytes.size() || vb >= layout.bytes.size()) return false;
  const std::size_t sa = layout.bytes[va], sb = layout.bytes[vb];
  if (!sa || !sb) return false;
  return layout.offset[va] < layout.offset[vb] + sb && layout.offset[vb] < layout.offset[va] + sa;
}

bool conflict(const Graph& g, const ArenaLayout& layout, const std::vector<Access>& a, const std::vector<Access>& b) {
  for (const Access& x : a)
    for (const Access& y : b)
      if ((x.write || y.write) && refs_overlap(g, layout, x.ref, y.ref)) return true;
  return false;
}

}  // namespace

bool ops_conflict(const Graph& g, const ArenaLayout& layout, int a, int b) {
  return conflict(g, layout, accesses(g.ops[static_cast<std::size_t>(a)]), accesses(g.ops[static_cast<std::size_t>(b)]));
}

Schedule schedule_ops(const Graph& g, const ArenaLayout& layout, int max_streams) {
  if (max_streams < 1) throw OptionError("schedule: max_streams must be at least 1, got " + std::to_string(max_streams));
  if (layout.offset.size() != g.values.size() || layout.bytes.size() != g.values.size())
    throw Error("schedule: the arena layout has " + std::to_string(layout.bytes.size()) + " values, the graph " +
                std::to_string(g.values.size()));
  const int n = static_cast<int>(g.ops.size());
  const auto S = static_cast<std::size_t>(max_streams);
  std::vector<std::vector<Access>> acc(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) acc[static_cast<std::size_t>(i)] = accesses(g.ops[static_cast<std::size_t>(i)]);

  Schedule s;
  s.stream.assign(static_cast<std::size_t>(n), 0);
  s.waits.assign(static_cast<std::size_t>(n), {});
  s.signals.assign(static_cast<std::size_t>(n), 0);
  s.clock.assign(static_cast<std::size_t>(n), std::vector<int>(S, -1));
  std::vector<int> tail(S, -1);  // last op per stream
  int used = 0;
  for (int j = 0; j < n; ++j) {
    const auto uj = static_cast<std::size_t>(j);
    // The earlier ops that op j must come after (brute force: a few hundred ops).
    std::vector<int> deps;
    for (int i = j - 1; i >= 0; --i)
      if (conflict(g, layout, acc[static_cast<std::size_t>(i)], acc[uj])) deps.push_back(i);  // newest first
    // What the dependencies alone already order before j: per stream, the latest such op.
    std::vector<int> known(S, -1);
    for (int d : deps) {
      const std::vector<int>& c = s.clock[static_cast<std::size_t>(d)];
      for (std::size_t t = 0; t < S; ++t) known[t] = std::max(known[t], c[t]);
    }
    int pick = -1;
    // 1. Continue the stream of the newest dependency that is its stream's last op.
    for (int d : deps) {
      const int st = s.stream[static_cast<std::size_t>(d)];
      if (tail[static_cast<std::size_t>(st)] == d) {
        pick = st;
        break;
      }
    }
    // 2. A used stream whose last op is already ordered before j (no false dependency).
    for (int st = 0; pick < 0 && st < used; ++st)
      if (known[static_cast<std::size_t>(st)] >= tail[static_cast<std::size_t>(st)]) pick = st;
    // 3. A new stream; 4. the stream whose last op is oldest.
    if (pick < 0 && used < max_streams) pick = used++;
    if (pick < 0) pick = static_cast<int>(std::min_element(tail.begin(), tail.begin() + used) - tail.begin());
    const auto up = static_cast<std::size_t>(pick);
    std::vector<int> clock = tail[up] >= 0 ? s.clock[static_cast<std::size_t>(tail[up])] : std::vector<int>(S, -1);
    for (int d : deps) {  // newest first, so an older one is often implied by a newer one's clock
      const auto ud = static_cast<std::size_t>(d);
      const auto sd = static_cast<std::size_t>(s.stream[ud]);
      if (clock[sd] >= d) continue;  // already ordered (same stream, or through an earlier wait)
      s.waits[uj].push_back(d);
      s.signals[ud] = 1;
      for (std::size_t t = 0; t < S; ++t) clock[t] = std::max(clock[t], s.clock[ud][t]);
    }
    clock[up] = j;
    s.clock[uj] = std::move(clock);
    s.stream[uj] = pick;
    tail[up] = j;
  }
  s.streams = std::max(1, used);
  return s;
}

ConcurrentPlan plan_concurrent(const Graph& g, const std::vector<std::size_t>& size, int max_streams) {
  if (size.size() != g.values.size())
    throw Error("plan_concurrent: " + std::to_string(size.size()) + " sizes for " + std::to_string(g.values.size()) +
                " values");
  const std::vector<Lifetime> life = value_lifetimes(g);
  ConcurrentPlan plan;
  plan.layout.offset.assign(size.size(), 0);
  plan.layout.bytes.assign(size.size(), 0);
  for (std::size_t v = 0; v < size.size(); ++v)
    if (life[v].first != Lifetime::kUnused) plan.naive_bytes += size[v];
  if (max_streams <= 1) {
    const ArenaPlan serial = plan_arena(life, size);
    for (std::size_t v = 0; v < size.size(); ++v)
      if (serial.offset[v] != ArenaPlan::kNone) {
        plan.layout.offset[v] = serial.offset[v];
        plan.layout.bytes[v] = size[v];
      }
    plan.bytes = serial.bytes;
    plan.schedule = schedule_ops(g, plan.layout, 1);
    return plan;
  }
  // 1. The data dependencies alone: every value on bytes of its own.
  ArenaLayout own;
  own.offset.assign(size.size(), 0);
  own.bytes.assign(size.size(), 0);
  std::size_t top = 0;
  for (std::size_t v = 0; v < size.size(); ++v)
    if (life[v].first != Lifetime::kUnused && size[v]) {
      own.offset[v] = top;
      own.bytes[v] = size[v];
      top += size[v];
    }
  const Schedule data = schedule_ops(g, own, max_streams);
  // 2. Who touches each value: op indices; -1 the preprocessing (the image), n the head (the outputs).
  const int n = static_cast<int>(g.ops.size());
  std::vector<std::vector<int>> touch(size.size());
  for (int i = 0; i < n; ++i)
    for (const ValueRef& r : op_operands(g.ops[static_cast<std::size_t>(i)]))
      if (r.valid()) touch[static_cast<std::size_t>(r.value)].push_back(i);
  for (std::size_t v = 0; v < size.size(); ++v) {
    if (life[v].first == -1) touch[v].push_back(-1);
    if (life[v].last == n) touch[v].push_back(n);
  }
  auto before = [&](std::size_t u, std::size_t v) {  // every toucher of u ordered before every toucher of v
    for (int a : touch[u])
      for (int b : touch[v]) {
        if (a == n || b == -1) return false;
        if (a == -1 || b == n) continue;
        if (!(a < b && data.ordered(a, b))) return false;
      }
    return true;
  };
  // 3. First fit by decreasing size among the values placed so far that may be in use at once.
  std::vector<std::size_t> order;
  for (std::size_t v = 0; v < size.size(); ++v)
    if (own.bytes[v]) order.push_back(v);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size[a] > size[b]; });
  std::vector<std::size_t> placed;
  for (std::size_t v : order) {
    std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of interfering placed values
    for (std::size_t u : placed)
      if (!before(u, v) && !before(v, u))
        busy.emplace_back(plan.layout.offset[u], plan.layout.offset[u] + size[u]);
    std::sort(busy.begin(), busy.end());
    std::size_t off = 0;
    for (const auto& [b, e] : busy) {
      if (b >= off + size[v]) break;
      off = std::max(off, e);
    }
    plan.layout.offset[v] = off;
    plan.layout.bytes[v] = size[v];
    plan.bytes = std::max(plan.bytes, off + size[v]);
    placed.push_back(v);
  }
  // 4. The schedule on that layout (sharing added only orders already ordered by the data).
  plan.schedule = schedule_ops(g, plan.layout, max_streams);
  return plan;
}

}  // namespace yolo12::graph
