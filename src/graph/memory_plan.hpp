// graph/memory_plan.hpp - one activation arena for a graph, planned from value lifetimes.
//
// Both executors (src/backends/cpu, src/backends/cuda) place every intermediate value of a graph at an offset in one
// arena. A value lives from the first op that touches it to the last; values whose lifetimes overlap
// never share memory. Placement walks the ops in execution order, ggml-alloc style: at op i the
// values born at i take the smallest free range that holds them (else the top of the arena grows),
// then the values whose last use is i give their range back and neighbouring free ranges merge.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.hpp"

namespace yolo12::graph {

// [first, last] op indices of a value; first == kUnused: no op touches it. A value written before
// op 0 (the input image, by the preprocessing) can be given first = last = -1.
struct Lifetime {
  static constexpr int kUnused = -2;
  int first = kUnused;
  int last = kUnused;
  bool overlaps(const Lifetime& o) const { return first <= o.last && o.first <= last; }
};

// Every ValueRef an op reads, writes or uses as scratch (invalid optional operands included; skip !valid()).
std::vector<ValueRef> op_operands(const Op& op);
// The lifetime of every value of g from the ops that touch it. The input image (Graph::kInputValue) is
// written before op 0 (by the preprocessing or the caller): it lives from -1 to its last reader. The
// graph's outputs are read by the head after the last op: they live to ops.size().
std::vector<Lifetime> value_lifetimes(const Graph& g);

struct ArenaPlan {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> offset;  // per value; kNone where size was 0 or the value is unused
  std::size_t bytes = 0;            // arena size (the peak), in the unit of the sizes
  std::size_t naive_bytes = 0;      // sum of all sizes: one buffer per value
};

// size[v]: the space value v needs, in any unit (bytes, elements); 0: not in the arena. Sizes are
// used as given: round them up to the alignment the caller needs and every offset keeps it.
ArenaPlan plan_arena(const std::vector<Lifetime>& lifetimes, const std::vector<std::size_t>& size);

}  // namespace yolo12::graph
