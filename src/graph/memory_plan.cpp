// graph/memory_plan.cpp - see memory_plan.hpp.
#include "graph/memory_plan.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "yolo12/errors.hpp"

namespace yolo12::graph {

std::vector<ValueRef> op_operands(const Op& op) {
  return visit_op(op, [](const auto& o) {
    std::vector<ValueRef> r = o.reads();
    const std::vector<ValueRef> w = o.writes(), s = o.scratch();
    r.insert(r.end(), w.begin(), w.end());
    r.insert(r.end(), s.begin(), s.end());  // memory for the op's duration: a lifetime of the op alone
    return r;
  });
}

std::vector<Lifetime> value_lifetimes(const Graph& g) {
  std::vector<Lifetime> life(g.values.size());
  const int n = static_cast<int>(g.ops.size());
  auto touch = [&](const ValueRef& r, int i) {
    if (!r.valid()) return;
    Lifetime& l = life[r.value];
    if (l.first == Lifetime::kUnused) l.first = i;
    l.last = std::max(l.last, i);
  };
  for (int i = 0; i < n; ++i)
    for (const ValueRef& r : op_operands(g.ops[i])) touch(r, i);
  for (const ValueRef& r : g.outputs) touch(r, n);  // the head reads them after the last op
  if (!life.empty() && life[Graph::kInputValue].first != Lifetime::kUnused) life[Graph::kInputValue].first = -1;
  return life;
}

namespace {

// Free ranges of the arena (offset -> size) and its top.
struct FreeList {
  std::map<std::size_t, std::size_t> ranges;
  std::size_t top = 0;

  std::size_t take(std::size_t size) {
    auto best = ranges.end();
    for (auto it = ranges.begin(); it != ranges.end(); ++it)
      if (it->second >= size && (best == ranges.end() || it->second < best->second)) best = it;
    if (best != ranges.end()) {
      const std::size_t off = best->first, rest = best->second - size;
      ranges.erase(best);
      if (rest) ranges[off + size] = rest;
      return off;
    }
    // Grow the top, reusing a free range that ends there.
    if (!ranges.empty()) {
      auto last = std::prev(ranges.end());
      if (last->first + last->second == top) {
        const std::size_t off = last->first;
        ranges.erase(last);
        top = off + size;
        return off;
      }
    }
    const std::size_t off = top;
    top += size;
    return off;
  }

  void give_back(std::size_t off, std::size_t size) {
    auto it = ranges.emplace(off, size).first;
    auto next = std::next(it);
    if (next != ranges.end() && it->first + it->second == next->first) {
      it->second += next->second;
      ranges.erase(next);
    }
    if (it != ranges.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        ranges.erase(it);
      }
    }
  }
};

}  // namespace

ArenaPlan plan_arena(const std::vector<Lifetime>& lifetimes, const std::vector<std::size_t>& size) {
  if (lifetimes.size() != size.size()) throw Error("plan_arena: one size per value expected");
  const int nv = static_cast<int>(size.size());
  ArenaPlan plan;
  plan.offset.assign(size.size(), ArenaPlan::kNone);
  int begin = 0, end = -1;  // range of op indices (a value may start at -1)
  for (int v = 0; v < nv; ++v) {
    if (!size[v] || lifetimes[v].first == Lifetime::kUnused) continue;
    if (lifetimes[v].last < lifetimes[v].first) throw Error("plan_arena: a lifetime ends before it starts");
    begin = std::min(begin, lifetimes[v].first);
    end = std::max(end, lifetimes[v].last);
    plan.naive_bytes += size[v];
  }
  FreeList arena;
  for (int i = begin; i <= end; ++i) {
    for (int v = 0; v < nv; ++v)
      if (size[v] && lifetimes[v].first == i) plan.offset[v] = arena.take(size[v]);
    for (int v = 0; v < nv; ++v)
      if (size[v] && lifetimes[v].first != Lifetime::kUnused && lifetimes[v].last == i)
        arena.give_back(plan.offset[v], size[v]);
  }
  plan.bytes = arena.top;
  return plan;
}

}  // namespace yolo12::graph
