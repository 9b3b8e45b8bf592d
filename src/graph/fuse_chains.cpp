// graph/fuse_chains.cpp - see fuse_chains.hpp.
#include "graph/fuse_chains.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "yolo12/errors.hpp"

namespace yolo12::graph {
namespace {

bool overlap(const ValueRef& a, const ValueRef& b) {
  return a.valid() && b.valid() && a.value == b.value && a.c0 < b.c0 + b.c && b.c0 < a.c0 + a.c;
}

bool same_slice(const ValueRef& a, const ValueRef& b) {
  return a.valid() && b.valid() && a.value == b.value && a.c0 == b.c0 && a.c == b.c;
}

// A conv a chain may hold as link j: 1x1, stride 1, no padding, groups 1, dilation 1, or as link 0 a depthwise conv
// within lim.max_depthwise_k; channels within the limits.
bool linkable(const ConvOp& c, const ChainLimits& lim, int j) {
  const ConvAttrs& a = c.attrs;
  auto channels_ok = [&](int n) { return n > 0 && n % lim.channel_multiple == 0 && n <= lim.max_channels; };
  const bool kind = chain_pointwise(a) || (j == 0 && chain_depthwise(a) && a.k <= lim.max_depthwise_k);
  return kind && channels_ok(a.c_in) && channels_ok(a.c_out);
}

long long weights_of(const ConvAttrs& a) { return static_cast<long long>(a.c_in / a.groups) * a.c_out * a.k * a.k; }

// Which ops touch each value (reads, writes or scratch), and the slices written (writes or scratch).
struct Touches {
  std::vector<std::vector<int>> ops;        // per value: op indices, ascending, each once
  std::vector<std::vector<ValueRef>> writes;  // per value: every slice an op writes
  std::vector<bool> head_reads;             // per value: a graph output or the head reads it

  explicit Touches(const Graph& g)
      : ops(g.values.size()), writes(g.values.size()), head_reads(g.values.size(), false) {
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      visit_op(g.ops[i], [&](const auto& o) {
        auto touch = [&](const ValueRef& r, bool write) {
          if (!r.valid()) return;
          std::vector<int>& t = ops[static_cast<std::size_t>(r.value)];
          if (t.empty() || t.back() != static_cast<int>(i)) t.push_back(static_cast<int>(i));
          if (write) writes[static_cast<std::size_t>(r.value)].push_back(r);
        };
        for (const ValueRef& r : o.reads()) touch(r, false);
        for (const ValueRef& r : o.writes()) touch(r, true);
        for (const ValueRef& r : o.scratch()) touch(r, true);
      });
    for (const ValueRef& r : g.outputs)
      if (r.valid()) head_reads[static_cast<std::size_t>(r.value)] = true;
    for (const ValueRef& r : g.head.inputs())
      if (r.valid()) head_reads[static_cast<std::size_t>(r.value)] = true;
  }
  // How many writes (of all ops) overlap slice r.
  int writers(const ValueRef& r) const {
    int n = 0;
    for (const ValueRef& w : writes[static_cast<std::size_t>(r.value)]) n += overlap(w, r) ? 1 : 0;
    return n;
  }
  // Whether a link's output value r must be stored by a fused op over ops [first, last]: an op outside them
  // touches it, or a graph output or the head reads it.
  bool needed_outside(const ValueRef& r, int first, int last) const {
    const auto v = static_cast<std::size_t>(r.value);
    bool needed = head_reads[v];
    for (int other : ops[v]) needed = needed || other < first || other > last;
    return needed;
  }
};

// The chain that starts at op `first` (at most lim.max_links ConvOps; fewer than 2: none) and its residual links.
struct Chain {
  int first = 0, n = 0;
  int residual_link[ConvChainAttrs::kMaxLinks] = {-1, -1, -1, -1, -1};
};

Chain grow(const Graph& g, const Touches& t, const ChainLimits& lim, int first) {
  Chain ch;
  ch.first = first;
  const int max_links = std::min(lim.max_links, ConvChainAttrs::kMaxLinks);
  std::vector<const ConvOp*> links;
  std::vector<ValueRef> memory_reads;  // what the chain reads from memory: link 0's input, residuals from memory
  long long weights = 0;
  for (int i = first; i < static_cast<int>(g.ops.size()) && static_cast<int>(links.size()) < max_links; ++i) {
    const ConvOp* c = g.ops[static_cast<std::size_t>(i)].get_if<ConvOp>();
    const int j = static_cast<int>(links.size());
    if (!c || !linkable(*c, lim, j)) break;
    const long long w = weights_of(c->attrs);
    if (weights + w > lim.max_weights) break;
    int residual_link = -1;
    if (j > 0) {
      // Exactly the slice the previous link writes, which nothing else writes any of.
      const ConvOp& prev = *links.back();
      if (!same_slice(c->in, prev.out) || t.writers(prev.out) != 1) break;
      // The residual: the output slice of an earlier link, a slice overlapping one (the chain ends), or memory.
      bool ends = false;
      if (c->residual.valid())
        for (int k = 0; k < j; ++k) {
          const ValueRef& out = links[static_cast<std::size_t>(k)]->out;
          if (same_slice(c->residual, out)) residual_link = k;
          else if (overlap(c->residual, out)) ends = true;
        }
      if (ends) break;
    }
    // No link's output over something the chain reads from memory.
    std::vector<ValueRef> reads;  // this link's reads from memory
    if (j == 0) reads.push_back(c->in);
    if (residual_link < 0 && c->residual.valid()) reads.push_back(c->residual);
    bool clash = false;
    for (const ValueRef& r : reads)
      for (const ConvOp* l : links) clash = clash || overlap(l->out, r);
    memory_reads.insert(memory_reads.end(), reads.begin(), reads.end());
    for (const ValueRef& r : memory_reads) clash = clash || overlap(c->out, r);
    if (clash) break;
    links.push_back(c);
    ch.residual_link[j] = residual_link;
    weights += w;
  }
  ch.n = static_cast<int>(links.size());
  return ch;
}

std::string joined_names(const Graph& g, const Chain& ch) {
  std::string name;
  for (int i = 0; i < ch.n; ++i) {
    if (i) name += " + ";
    name += g.ops[static_cast<std::size_t>(ch.first + i)].name;
  }
  return name;
}

}  // namespace

int fuse_conv_chains(Graph& g, const ChainLimits& lim) {
  if (lim.channel_multiple < 1)
    throw OptionError("fuse_conv_chains: channel_multiple must be at least 1, got " +
                      std::to_string(lim.channel_multiple));
  const Touches t(g);  // ops keep their indices until the end: decide on the unchanged graph, then apply
  std::vector<Op> ops;
  int chains = 0;
  for (int i = 0; i < static_cast<int>(g.ops.size());) {
    const Chain ch = grow(g, t, lim, i);
    if (ch.n < 2) {
      ops.push_back(std::move(g.ops[static_cast<std::size_t>(i)]));
      ++i;
      continue;
    }
    ConvChainOp op;
    op.attrs.links = ch.n;
    const int last = ch.first + ch.n - 1;
    for (int k = 0; k < ch.n; ++k) {
      const ConvOp& c = g.ops[static_cast<std::size_t>(ch.first + k)].get<ConvOp>();
      op.attrs.residual_link[k] = ch.residual_link[k];
      op.attrs.stored[k] = k == ch.n - 1 || t.needed_outside(c.out, ch.first, last);
      op.links.push_back(c);
    }
    ops.push_back(Op{joined_names(g, ch), std::move(op)});
    ++chains;
    i += ch.n;
  }
  g.ops = std::move(ops);
  return chains;
}

namespace {

// The two pair passes: every two CONSECUTIVE ConvOps a and b for which `form` holds of both, where b reads through
// `in` exactly the slice a writes, nothing else writes any of it, a has no residual, b has none or (where
// b_residual) one from memory that is neither a's output nor overlaps it, and b's output overlaps neither a's input
// nor b's residual.
template <typename Form>
int fuse_pairs(Graph& g, const Form& form, bool b_residual, const PairFilter& accept) {
  const Touches t(g);  // decided on the unchanged graph, then applied
  std::vector<Op> ops;
  int pairs = 0;
  for (std::size_t i = 0; i < g.ops.size();) {
    const ConvOp* a = g.ops[i].get_if<ConvOp>();
    const ConvOp* b = i + 1 < g.ops.size() ? g.ops[i + 1].get_if<ConvOp>() : nullptr;
    if (!a || !b || !form(a->attrs) || !form(b->attrs) || a->residual.valid() ||
        (b->residual.valid() && (!b_residual || overlap(b->residual, a->out) || overlap(b->out, b->residual))) ||
        !same_slice(b->in, a->out) || t.writers(a->out) != 1 || overlap(b->out, a->in) ||
        (accept && !accept(a->attrs, b->attrs))) {
      ops.push_back(std::move(g.ops[i]));
      ++i;
      continue;
    }
    ConvChainOp op;
    op.attrs.links = 2;
    op.attrs.stored[0] = t.needed_outside(a->out, static_cast<int>(i), static_cast<int>(i + 1));
    op.attrs.stored[1] = true;
    op.links = {*a, *b};
    ops.push_back(Op{g.ops[i].name + " + " + g.ops[i + 1].name, std::move(op)});
    ++pairs;
    i += 2;
  }
  g.ops = std::move(ops);
  return pairs;
}

}  // namespace

int fuse_stride2_pairs(Graph& g, const PairFilter& accept) {
  return fuse_pairs(g, [](const ConvAttrs& a) { return chain_stride2(a); }, false, accept);
}

int fuse_stride1_pairs(Graph& g, const PairFilter& accept) {
  return fuse_pairs(g, [](const ConvAttrs& a) { return chain_stride1(a); }, true, accept);
}

int fuse_dw_branches(Graph& g, const BranchFilter& accept) {
  constexpr int kLinks = 5;
  const Touches t(g);  // decided on the unchanged graph, then applied
  const auto dw3 = [](const ConvAttrs& a) { return chain_depthwise(a) && a.k == 3; };
  std::vector<Op> ops;
  int branches = 0;
  for (std::size_t i = 0; i < g.ops.size();) {
    const ConvOp* c[kLinks] = {};
    bool ok = i + kLinks <= g.ops.size();
    for (int k = 0; ok && k < kLinks; ++k) {
      c[k] = g.ops[i + static_cast<std::size_t>(k)].get_if<ConvOp>();
      ok = c[k] && !c[k]->residual.valid() &&
           (k == 0 || k == 2 ? dw3(c[k]->attrs) : chain_pointwise(c[k]->attrs));
    }
    const int first = static_cast<int>(i), last = first + kLinks - 1;
    for (int k = 1; ok && k < kLinks; ++k) {
      const ValueRef& prev = c[k - 1]->out;
      ok = same_slice(c[k]->in, prev) && t.writers(prev) == 1 && !t.needed_outside(prev, first, last) &&
           !overlap(c[kLinks - 1]->out, prev) && !overlap(prev, c[0]->in);
    }
    ok = ok && !overlap(c[kLinks - 1]->out, c[0]->in);
    if (ok && accept) {
      std::vector<ConvAttrs> attrs;
      for (const ConvOp* l : c) attrs.push_back(l->attrs);
      ok = accept(attrs);
    }
    if (!ok) {
      ops.push_back(std::move(g.ops[i]));
      ++i;
      continue;
    }
    ConvChainOp op;
    op.attrs.links = kLinks;
    op.attrs.stored[kLinks - 1] = true;
    std::string name;
    for (int k = 0; k < kLinks; ++k) {
      op.links.push_back(*c[k]);
      name += (k ? " + " : "") + g.ops[i + static_cast<std::size_t>(k)].name;
    }
    ops.push_back(Op{name, std::move(op)});
    ++branches;
    i += kLinks;
  }
  g.ops = std::move(ops);
  return branches;
}

void check_conv_chain(const Graph& g, const ConvChainOp& op, const std::string& op_name) {
  auto bad = [&](const std::string& what) { throw ModelError("conv chain '" + op_name + "': " + what); };
  const int n = op.attrs.links;
  if (n < 2 || n > ConvChainAttrs::kMaxLinks)
    bad(std::to_string(n) + " links (2.." + std::to_string(ConvChainAttrs::kMaxLinks) + ")");
  if (static_cast<int>(op.links.size()) != n)
    bad("attrs say " + std::to_string(n) + " links, the op holds " + std::to_string(op.links.size()));
  if (!op.attrs.stored[n - 1]) bad("the last link's output is not stored");
  auto inside = [&](const ValueRef& r) {
    return r.valid() && static_cast<std::size_t>(r.value) < g.values.size() && r.c0 >= 0 && r.c > 0 &&
           r.c0 + r.c <= g.values[static_cast<std::size_t>(r.value)].c;
  };
  const ValueRef& in0 = op.links[0].in;
  if (!inside(in0)) bad("link 0 reads no slice of a value");
  const Value& map = g.values[static_cast<std::size_t>(in0.value)];
  if (chain_stride2_pair(op) || chain_stride1_pair(op)) {  // the pair forms: two 3x3 convs, outputs at their sizes
    const bool s2 = chain_stride2_pair(op);
    for (int i = 0; i < 2; ++i) {
      const ConvOp& c = op.links[static_cast<std::size_t>(i)];
      const std::string link = "link " + std::to_string(i) + ": ";
      if (!inside(c.in) || !inside(c.out) || c.in.c != c.attrs.c_in || c.out.c != c.attrs.c_out)
        bad(link + "its input or output is not a slice of " + std::to_string(c.attrs.c_in) + " -> " +
            std::to_string(c.attrs.c_out) + " channels inside a value");
      const Value& in = g.values[static_cast<std::size_t>(c.in.value)];
      const Value& out = g.values[static_cast<std::size_t>(c.out.value)];
      if (out.h != c.attrs.out_size(in.h) || out.w != c.attrs.out_size(in.w))
        bad(link + "its output is not at its conv's output size");
      if (op.attrs.residual_link[i] != -1) bad(link + "a pair takes no residual from its own link");
      if (c.residual.valid() && (s2 || i == 0)) bad(link + (s2 ? "a stride-2 pair has no residuals"
                                                                  : "the first link of a stride-1 pair has no residual"));
      if (c.residual.valid() && (!inside(c.residual) || c.residual.c != c.attrs.c_out ||
                                 g.values[static_cast<std::size_t>(c.residual.value)].h != out.h ||
                                 g.values[static_cast<std::size_t>(c.residual.value)].w != out.w))
        bad(link + "its residual is not a slice of " + std::to_string(c.attrs.c_out) + " channels at its output size");
      if (c.residual.valid() && (overlap(c.residual, op.links[0].out) || overlap(c.residual, c.out)))
        bad(link + "its residual overlaps the pair's intermediate or its own output");
    }
    if (!same_slice(op.links[1].in, op.links[0].out)) bad("link 1 does not read exactly the output of link 0");
    for (int i = 2; i < ConvChainAttrs::kMaxLinks; ++i)
      if (op.attrs.residual_link[i] != -1 || op.attrs.stored[i]) bad("attributes set past the last link");
    return;
  }
  const bool branch = chain_dw_branch(op);  // links 0 and 2 depthwise, no residuals
  for (int i = 0; i < n; ++i) {
    const ConvOp& c = op.links[static_cast<std::size_t>(i)];
    const ConvAttrs& a = c.attrs;
    const std::string link = "link " + std::to_string(i) + ": ";
    if (branch && (c.residual.valid() || op.attrs.residual_link[i] != -1))
      bad(link + "a depthwise branch takes no residual");
    if (!chain_pointwise(a) && !((i == 0 || (branch && i == 2)) && chain_depthwise(a)))
      bad(link + (i == 0 ? "neither a 1x1 conv with stride 1, pad 0, groups 1, dilation 1 nor a depthwise conv at "
                           "stride 1 keeping the map's size"
                         : "not a 1x1 conv with stride 1, pad 0, groups 1, dilation 1"));
    if (!inside(c.in) || !inside(c.out) || c.in.c != a.c_in || c.out.c != a.c_out)
      bad(link + "its input or output is not a slice of " + std::to_string(a.c_in) + " -> " +
          std::to_string(a.c_out) + " channels inside a value");
    const Value& out = g.values[static_cast<std::size_t>(c.out.value)];
    if (out.h != map.h || out.w != map.w) bad(link + "its output is not at the chain's H x W");
    const int r = op.attrs.residual_link[i];
    if (r >= i || r < -1) bad(link + "residual_link " + std::to_string(r) + " is not an earlier link");
    if (r >= 0 && !same_slice(c.residual, op.links[static_cast<std::size_t>(r)].out))
      bad(link + "residual_link " + std::to_string(r) + " but its residual is not that link's output");
    if (c.residual.valid() && (!inside(c.residual) || c.residual.c != a.c_out))
      bad(link + "its residual is not a slice of " + std::to_string(a.c_out) + " channels inside a value");
    if (i + 1 < n) {
      const ConvOp& next = op.links[static_cast<std::size_t>(i + 1)];
      if (!same_slice(next.in, c.out))
        bad("link " + std::to_string(i + 1) + " does not read exactly the output of link " + std::to_string(i));
    }
  }
  for (int i = n; i < ConvChainAttrs::kMaxLinks; ++i)
    if (op.attrs.residual_link[i] != -1 || op.attrs.stored[i]) bad("attributes set past the last link");
}

}  // namespace yolo12::graph
