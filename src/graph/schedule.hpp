// graph/schedule.hpp - a multi-stream schedule of a graph's ops: which stream runs each op and which
// ops on other streams it waits for, so that independent branches (the Detect head's box and class
// chains, a level's head beside the neck's next level) run at the same time.
//
// Two ops must stay ordered when they touch the same bytes and one of them writes. That covers the
// data dependencies (a reader after the writers of its channels, a writer after the earlier readers
// and writers of the same channels) and the ones the arena plan adds (memory_plan.hpp): a value placed
// on bytes that an earlier, dead value used comes after every op that touched that value. The
// schedule keeps every such pair ordered, and nothing else is ordered but stream order.
//
// Built in execution order, greedily: an op continues the stream of a dependency that ended it, else
// takes a stream whose last op is already ordered before it, else opens a stream (up to
// max_streams), else joins the stream whose last op is oldest (a false but safe dependency). Waits
// implied by earlier waits are dropped (vector clocks). With max_streams = 1 the schedule is the
// execution order on one stream and no waits.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.hpp"
#include "graph/memory_plan.hpp"

namespace yolo12::graph {

struct Schedule {
  int streams = 1;                     // streams used, 1..max_streams
  std::vector<int> stream;             // per op: its stream
  std::vector<std::vector<int>> waits; // per op: ops on other streams to wait for, before it runs
  std::vector<char> signals;           // per op: 1 when a later op waits for it (record an event after it)
  // Per op, per stream t: the latest op of stream t ordered before or at this op (-1: none). Op i is
  // ordered before op j exactly when clock[j][stream[i]] >= i.
  std::vector<std::vector<int>> clock;

  bool ordered(int before, int after) const {
    return clock[static_cast<std::size_t>(after)][static_cast<std::size_t>(stream[static_cast<std::size_t>(before)])] >=
           before;
  }
};

// Where each value lives in the executor's arena: byte offset and size per value (size 0: not in the
// arena, never conflicts). Values must be laid out as NHWC or NCHW planes of `c` channels; a channel
// slice of a value is treated as touching only that value's channels [c0, c0 + c).
struct ArenaLayout {
  std::vector<std::size_t> offset;
  std::vector<std::size_t> bytes;
};

// True when ops a and b of g touch a common byte of `layout` and at least one of them writes it (an op writes
// its scratch values).
bool ops_conflict(const Graph& g, const ArenaLayout& layout, int a, int b);

// The schedule of g's ops over at most max_streams streams (>= 1) on a given layout.
Schedule schedule_ops(const Graph& g, const ArenaLayout& layout, int max_streams);

// The arena and the schedule together, for an executor that runs g on up to max_streams streams.
// The serial arena plan (plan_arena: reuse in execution order) would order ops of independent
// branches through the bytes they share. So: schedule the data dependencies alone (every value on
// bytes of its own), let two values share bytes only where every op touching one is ordered before
// every op touching the other in that schedule (the image counts as touched before op 0, the
// outputs after the last op), place them first fit by decreasing size, and schedule again on that
// layout. max_streams = 1 gives plan_arena's layout and one stream.
struct ConcurrentPlan {
  ArenaLayout layout;
  std::size_t bytes = 0;        // the arena's size
  std::size_t naive_bytes = 0;  // one buffer per value
  Schedule schedule;
};
// size[v]: the bytes value v needs (0: not in the arena), already rounded to the caller's alignment.
ConcurrentPlan plan_concurrent(const Graph& g, const std::vector<std::size_t>& size, int max_streams);

}  // namespace yolo12::graph
