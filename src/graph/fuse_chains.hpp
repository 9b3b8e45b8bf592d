// graph/fuse_chains.hpp - fusing runs of 1x1 convs, and pairs of 3x3 convs, into ConvChain ops (graph/ops.hpp,
// ConvChainAttrs), so that a backend can keep the maps between them on chip.
//
// Why: the A2C2f attention blocks end in four 1x1 convs in a row (attn.proj, mlp.0, mlp.1 and the next block's
// attn.qkv), each reading the whole map the one before wrote (and A2C2f's cv1 feeds its first block's qkv); on the GPU each is a pass over the map through
// memory. As one op, a kernel can read the block's input once, keep the intermediate maps in shared memory or
// registers, and write only the maps something after the chain reads. The CUDA backend runs the pass after
// graph::pad_channels; the CPU backend runs the links one by one (same results as the plain convs) and runs the
// pass only in tests.
//
// fuse_conv_chains walks g.ops from the first op and makes a chain of the ConvOps links[0..n) when
//   - they are CONSECUTIVE in g.ops and each is a 1x1 conv with stride 1, pad 0, groups 1, dilation 1, except that
//     link 0 may be a depthwise k x k conv at stride 1 keeping the map's size, k <= lim.max_depthwise_k;
//   - every link's c_in and c_out is a multiple of lim.channel_multiple and at most lim.max_channels, the sum
//     over the links of c_in * c_out is at most lim.max_weights, and 2 <= n <= lim.max_links;
//   - link i + 1 reads through `in` exactly the slice link i writes (the same value and channels: a whole value,
//     or link i's slice of a concat buffer, as A2C2f's cv1 writes the map its first block's qkv reads), and no
//     op of the graph but link i writes any channel of that slice;
//   - link j's residual, if it is exactly the output slice of an earlier link i of the chain, becomes
//     residual_link[j] = i (the kernel may take it from chip); if it overlaps a link's output slice otherwise,
//     the chain ends before link j; else it stays a residual read from memory (or none);
//   - no link writes a slice that overlaps (same value, a common channel) what the chain reads from memory: link
//     0's input or a residual from memory. (Every link of a chain reads and writes per pixel, but a fused kernel
//     may read its inputs and write its outputs in any order within a pixel; the built graphs never do this.)
// Greedy: a chain grows while the next op qualifies as its next link; the op that does not starts the next try.
// A chain of one link stays a plain ConvOp.
//
// stored[i] for i < n - 1 is true iff an op outside the chain reads or writes any slice of links[i].out's value,
// or a graph output or the head reads it; the last link's output is always stored. The unstored outputs are the
// op's scratch() values: they stay in g.values, nothing but the chain touches them, and their contents are
// undefined after it.
//
// The chain replaces its links at the place of its first link, named by the links' names joined with " + " (so
// a log shows them); the other ops keep their order. Values, outputs, the head and the tensor list (params) are
// untouched. Deterministic; a graph with nothing to fuse is unchanged.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace yolo12::graph {

struct ChainLimits {
  int max_links = ConvChainAttrs::kMaxLinks;  // at most ConvChainAttrs::kMaxLinks
  int channel_multiple = 16;                  // every link's c_in and c_out (the fp16 kernel's MMA tiles)
  int max_channels = 512;                     // every link's c_in and c_out (what fits on chip)
  long long max_weights = 1 << 20;            // sum over the links of their weights (c_in * c_out, or c * k * k)
  int max_depthwise_k = 0;                    // link 0 may be a depthwise conv (graph/ops.hpp, chain_depthwise) up
                                              // to this k x k; 0: never (the CUDA backend's kernel: 7)
};

// Fuses the chains above in place; returns how many it made (0: g is unchanged).
int fuse_conv_chains(Graph& g, const ChainLimits& lim = {});

// Makes a stride-2 pair (graph/ops.hpp, chain_stride2_pair) of every two CONSECUTIVE ConvOps that are both 3x3
// convs at stride 2 with pad 1, groups 1, dilation 1 (chain_stride2), where the second reads through `in` exactly
// the slice the first writes, no other op writes any of that slice, neither has a residual, and the second's output
// does not overlap the first's input. stored[0] as fuse_conv_chains sets it; the pair takes the first conv's place,
// named "first + second". Greedy from the first op; deterministic; returns how many pairs it made (0: g is
// unchanged). Where `accept` is given, a pair is made only where it also returns true for the two convs' attributes
// (the CUDA backend: the channel counts its kernel takes, so that no pair is made only to run as its links). Why:
// the network's stem and the conv after it (the CUDA backend's conv2d_stem_pair_f16 keeps the stem's map on chip;
// variant f16_stem_pair).
using PairFilter = std::function<bool(const ConvAttrs& first, const ConvAttrs& second)>;
int fuse_stride2_pairs(Graph& g, const PairFilter& accept = nullptr);

// The same for stride-1 pairs (graph/ops.hpp, chain_stride1_pair): two CONSECUTIVE 3x3 convs at stride 1 with pad 1,
// groups 1, dilation 1 (chain_stride1), the second reading exactly the slice the first writes (which nothing else
// writes), the first without a residual; the second may have one from memory that neither overlaps the first's
// output nor its own. Its output must not overlap the first's input. Why: the bottlenecks of C3k2 and C3k (cv1 3x3,
// then cv2 3x3 + the bottleneck's input); the CUDA backend's conv2d_halo_pair_f16 keeps cv1's map on chip (variant
// f16_halo_pair).
int fuse_stride1_pairs(Graph& g, const PairFilter& accept = nullptr);

// Makes a depthwise branch (graph/ops.hpp, chain_dw_branch) of every five CONSECUTIVE ConvOps that are a depthwise
// 3x3 conv, a 1x1, a depthwise 3x3, a 1x1 and a 1x1 (chain_depthwise with k 3, chain_pointwise), each but the first
// reading through `in` exactly the slice the one before writes (which nothing else writes), none with a residual,
// where nothing outside the five reads or writes the first four outputs (nor a graph output or the head: they become
// scratch, stored[0..3] false) and the last output overlaps neither the first's input nor those four. The branch takes
// the first conv's place, named by the five names joined with " + ". Greedy from the first op; deterministic; returns
// how many it made (0: g is unchanged). Where `accept` is given, a branch is made only where it also returns true for
// the five convs' attributes (the CUDA backend: what its kernel takes). Why: the Detect head's class branch of YOLO11
// and YOLO12 (cv3[i]: DWConv, Conv 1x1, DWConv, Conv 1x1, Conv2d 1x1 to the classes); the CUDA backend's
// conv2d_dw_branch_f16 keeps its four maps on chip (variant f16_dw_branch).
using BranchFilter = std::function<bool(const std::vector<ConvAttrs>& links)>;
int fuse_dw_branches(Graph& g, const BranchFilter& accept = nullptr);

// Checks what every backend's bind relies on (throws yolo12::ModelError naming op_name): 2..kMaxLinks links, as
// many as attrs.links; each link chain_pointwise (link 0 chain_depthwise too: graph/ops.hpp), refs inside their values
// and as wide as its attributes, all at the H x W of link 0's input; link i + 1 reads exactly link i's output
// slice; residual_link[i] < i, and where it is set, links[i].residual is exactly the output
// of that link; the last link stored. A stride-2 pair (chain_stride2_pair) instead: two chain_stride2 links without
// residuals, each output at its conv's output size; a stride-1 pair (chain_stride1_pair) the same with chain_stride1
// links, where link 1 may have a residual from memory (at its output's size and width, overlapping neither link 0's
// output nor its own). A depthwise branch (chain_dw_branch) is checked as a chain whose links 0 and 2 are depthwise,
// with no residual on any link.
void check_conv_chain(const Graph& g, const ConvChainOp& op, const std::string& op_name);

}  // namespace yolo12::graph
