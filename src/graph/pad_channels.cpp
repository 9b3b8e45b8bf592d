// graph/pad_channels.cpp - see pad_channels.hpp.
#include "graph/pad_channels.hpp"

#include <cstddef>

namespace yolo12::graph {
namespace {

// Whether act(0) == 0, so that a widened output channel (zero weights, zero bias) computes 0. A new Act
// must answer here (no default: the compiler names a missing case).
bool maps_zero_to_zero(Act act) {
  switch (act) {
    case Act::None: return true;
    case Act::SiLU: return true;  // 0 * sigmoid(0)
  }
  return false;
}

bool whole(const ValueRef& r, const Value& v) { return r.c0 == 0 && r.c == v.c; }

// Who touches each value: the op that writes it (-1: none, -2: more than one, or not as pad_channels
// wants), and whether every reader is a conv pad_channels can widen.
struct Use {
  int writer = -1;
  bool readers_ok = true;
};

}  // namespace

std::vector<int> pad_channels(Graph& g) {
  const std::size_t nv = g.values.size();
  std::vector<Use> use(nv);
  std::vector<bool> fixed(nv, false);  // never widened: the input, the outputs, whatever the head reads
  if (nv > static_cast<std::size_t>(Graph::kInputValue)) fixed[Graph::kInputValue] = true;
  auto fix = [&](const ValueRef& r) {
    if (r.valid() && static_cast<std::size_t>(r.value) < nv) fixed[static_cast<std::size_t>(r.value)] = true;
  };
  for (const ValueRef& r : g.outputs) fix(r);
  for (const ValueRef& r : g.head.inputs()) fix(r);

  // Decide on the unchanged graph, then apply: an op may produce one widened value and read another.
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const ConvOp* conv = op.get_if<ConvOp>();
    visit_op(op, [&](const auto& o) {
      for (const ValueRef& w : o.writes()) {
        if (!w.valid() || static_cast<std::size_t>(w.value) >= nv) continue;
        Use& u = use[static_cast<std::size_t>(w.value)];
        const bool sole_whole = conv && conv->attrs.groups == 1 && !conv->residual.valid() &&
                                conv->in.value != w.value && whole(w, g.values[static_cast<std::size_t>(w.value)]) &&
                                maps_zero_to_zero(conv->attrs.act);
        u.writer = u.writer == -1 && sole_whole ? static_cast<int>(i) : -2;
      }
      for (const ValueRef& w : o.scratch())  // a ConvChain's (fuse_chains runs after this pass): never widened
        if (w.valid() && static_cast<std::size_t>(w.value) < nv) use[static_cast<std::size_t>(w.value)].writer = -2;
      for (const ValueRef& r : o.reads()) {
        if (!r.valid() || static_cast<std::size_t>(r.value) >= nv) continue;
        const bool whole_in = conv && conv->attrs.groups == 1 && conv->in.value == r.value &&
                              conv->residual.value != r.value && whole(r, g.values[static_cast<std::size_t>(r.value)]);
        if (!whole_in) use[static_cast<std::size_t>(r.value)].readers_ok = false;
      }
    });
  }

  std::vector<int> widened;
  for (std::size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    if (fixed[v] || val.c % kPadChannelsTo == 0 || use[v].writer < 0 || !use[v].readers_ok) continue;
    widened.push_back(static_cast<int>(v));
  }
  for (const int v : widened) {
    Value& val = g.values[static_cast<std::size_t>(v)];
    const int padded = (val.c + kPadChannelsTo - 1) / kPadChannelsTo * kPadChannelsTo;
    for (Op& op : g.ops) {
      ConvOp* conv = std::get_if<ConvOp>(&op.op);
      if (!conv) continue;
      if (conv->out.value == v) {
        if (conv->weight_c_out == 0) conv->weight_c_out = conv->attrs.c_out;
        conv->attrs.c_out = conv->out.c = padded;
      }
      if (conv->in.value == v) {
        if (conv->weight_c_in == 0) conv->weight_c_in = conv->attrs.c_in;
        conv->attrs.c_in = conv->in.c = padded;
      }
    }
    val.c = padded;
  }
  return widened;
}

}  // namespace yolo12::graph
