// graph/pad_channels.hpp - widening conv-to-conv values to a multiple of 8 channels (the CUDA backend's
// graph pass; the CPU backend never runs it).
//
// Why: the CUDA fp16 conv kernels read their input in 16-byte chunks of 8 channels and the Hopper wgmma
// kernels need c_in / groups % 8 == 0; a conv whose input has, say, 460 channels falls back to scalar
// gathers on mma.sync. YOLO12 l and x have such values in every A2C2f attention block: the MLP's hidden
// width int(c * 1.2) (307, 460, 614, ...), between a 1x1 conv and a 1x1 conv. Measured on the H200 at
// batch 32, yolo12x's 16 convs 384->460 and 460->384 ran at 80-94 TFLOP/s (6-10x their floor) beside
// 200-300 TFLOP/s for the aligned 1x1 convs around them (docs/kernels-conv.md).
//
// pad_channels widens value V to round_up(V.c, 8) when all of these hold:
//   - V is not the input (Graph::kInputValue), not a graph output and not read by the head;
//   - V.c % 8 != 0;
//   - exactly one op writes V: a ConvOp with groups 1, no residual, whose out is the whole of V
//     (c0 0, c V.c) and which does not read V;
//   - every op that reads V is a ConvOp with groups 1 reading the whole of V through `in` (never as
//     its residual);
//   - no other op reads or writes any slice of V (a Concat's buffer has several writers; a split is a
//     sliced read; an attention, pool, upsample, copy or conv chain is another op kind, and a chain's scratch
//     values count as written by it: all stay as they are. The CUDA backend runs graph::fuse_conv_chains after
//     this pass, so its graphs have no chains here).
// Then V.c, the producer's attrs.c_out and out.c, and each reader's attrs.c_in and in.c become the padded
// count; each op's weight_c_out / weight_c_in (graph/ops.hpp, ConvOp) record the stored tensor's
// channels. Nothing else changes: the other values and ops, the outputs, the head and the tensor list
// (`params`, the stored shapes) stay byte for byte, and a graph with nothing to widen is unchanged.
//
// Results are unchanged when the widened channels' weights, bias and gamma are zero (the CUDA backend's
// upload_weights packs them so): a widened output channel computes act(0 + 0) * 0 = 0 (every Act maps 0
// to 0), and the readers' zero weights add exact zeros for it. Deterministic: the same graph gives the
// same padding, so weights packed from one input size's graph fit every other size's.
#pragma once

#include <vector>

#include "graph/graph.hpp"

namespace yolo12::graph {

constexpr int kPadChannelsTo = 8;  // one 16-byte chunk of fp16 channels

// Widens the values above in place; returns their indices, ascending (empty: g is unchanged).
std::vector<int> pad_channels(Graph& g);

}  // namespace yolo12::graph
