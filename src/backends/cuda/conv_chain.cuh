// src/backends/cuda/conv_chain.cuh - conv2d_chain_f16: a chain of convs (graph::ConvChainOp: 1x1 links, and a depthwise
// link 0) in one fp16 kernel whose intermediate maps stay in shared memory (conv_chain.cu; its plan and indices in
// chain_layout.hpp).
//
// Why: at batch 1 each conv of yolo12n costs about 4-6 us however small it is (launch, ramp, the tail), and its
// A2C2f blocks run chains of five convs (attn.pe, attn.proj, mlp.0, mlp.1, the next block's qkv) on 64..384 channels.
// At batch 32 the same chains write and read their intermediates through memory: yolo12n's 1x1 chain at 40x40 moves
// about 97 MB as four convs and 39 MB as one. graph::fuse_conv_chains (graph/fuse_chains.hpp) makes the chains;
// the CUDA executor runs that pass for fp16 under the conv variant conv_chain. The op's bind (conv_chain.cu) runs a
// chain one of three ways per batch: fused on this kernel, a depthwise link 0 on its own kernel and the rest fused, or
// the links one by one on the conv kernels (chain_rule; with kernel tuning, the fastest, cached as "fused", "split"
// or "links").
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "chain_layout.hpp"
#include "graph/fuse_chains.hpp"
#include "graph/ops.hpp"

namespace yolo12::cuda {

// One link: its conv's epilogue (conv.cuh: y = act(x W + bias) * gamma + residual) and where its maps are.
struct ChainLinkParams {
  const __half* w = nullptr;         // (c_out, k_pad) packed by conv_pack_weights; K columns [0, c_in) used. A
                                     // depthwise link 0: (dw_k * dw_k, k_pad), k_pad = round_up(c, 8)
  int k_pad = 0;
  const float* bias = nullptr;       // (c_out)
  const float* gamma = nullptr;      // (c_out) or nullptr
  bool silu = false;
  const __half* residual = nullptr;  // (M, ldr) view, where residual_link < 0 and the link has a residual
  int ldr = 0;
  __half* y = nullptr;               // (M, ldy) view where the output is stored, else nullptr (on chip only)
  int ldy = 0;
};

// The launch: the op's chain attributes verbatim (links, residual_link, stored), the sizes, the views and the plan.
struct ConvChainParams : graph::ConvChainAttrs {
  int batch = 1, h = 0, w = 0;         // M = batch * h * w pixels, each a row of every map
  int dw_k = 0;                        // link 0 is a depthwise dw_k x dw_k conv (stride 1, pad dw_k / 2); 0: a 1x1
  int c[chain::kMaxLinks + 1] = {};    // c[0] link 0's input channels, c[i + 1] link i's output channels
  const __half* x = nullptr;           // (M, ldx) view, c[0] channels used
  int ldx = 0;
  ChainLinkParams link[chain::kMaxLinks];
  chain::ChainLayout layout;           // chain_plan's, for this batch
};

// The chain's shape as chain_layout takes it.
chain::ChainShape chain_shape(const ConvChainParams& p);
// Whether conv2d_chain_f16 runs p at its batch, and with which tiles (p.layout): every view 16-byte aligned with
// leading dimensions a multiple of 8 channels, the shape one chain_layout takes, shared memory enough on this device.
// Tiles: the widest of 128 rows (8 warps), 64, 32 (4 warps) that still gives two blocks per SM, with the most weight
// stages (2..4) with which two blocks are resident per SM (else the most that fit); else 16 rows (the most blocks:
// batch 1) with the most stages that fit. Written before any measurement.
bool chain_plan(const ConvChainParams& p, chain::ChainLayout& layout);
// What graph::fuse_conv_chains may fuse for this kernel: chains of up to chain::kMaxLinks links (link 0 may be a
// depthwise conv up to 7 x 7) over channels that are
// multiples of chain::kChannelStep, at most 512 channels in and out per link (a weight stage of 64 rows of 520 halves), at
// most 512 Ki weights per chain (1 MiB of halves, which every block streams from L2 once).
graph::ChainLimits chain_limits();
// Launches on `stream` with p.layout (from chain_plan); no allocation, no synchronisation.
void conv2d_chain_f16(const ConvChainParams& p, cudaStream_t stream);

}  // namespace yolo12::cuda
