// src/backends/cuda/conv_stem_pair.cuh - conv2d_stem_pair_f16 (conv_stem_pair.cu): the network's first two convs in
// one fp16 kernel, so that the stem's map (yolo12n at batch 32: 105 MB at 320x320x16) never goes through memory.
// Not part of the executor's interface: the CUDA bind of a ConvChain op of the stride-2 pair form calls it
// (conv_chain.cu), which the executor makes only under variant f16_stem_pair (on by default), and only for the channel counts
// the kernel takes. tests/gpu/test_stem_pair.cu checks it against the double reference and times it against the two
// kernels it replaces ([.bench]).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv.cuh"

namespace yolo12::cuda::conv_detail {

// The pair it takes: `stem` 3 -> C1 and `next` C1 -> C2, both 3x3, stride 2, pad 1, dilation 1, groups 1, with
// (C1, C2) = (16, 32) (yolo12n) or (32, 64) (yolo12s); next's input is stem's output (same batch, next.h ==
// stem.ho, next.w_in == stem.wo). Any input size and batch.
bool stem_pair_supports(const ConvShape& stem, const ConvShape& next);
// The channel counts alone: c_in 3 and (c1, c2) one of the pairs above (the executor's filter for
// graph::fuse_stride2_pairs, before any shape is bound).
bool stem_pair_channels(int c_in, int c1, int c2);
// The views it takes besides: no residual and no gamma on either conv; stem.x any view with ldx >= 3 (copied raw
// by cp.async where ldx == 3, read by element otherwise; stem_patch.cuh); next.y 4-byte aligned with an even ldy >= c_out (half2 stores); both weights packed as for every GEMM
// conv (conv_pack_weights), next's 4-byte aligned. stem.y and next.x are not read: the stem's map stays on chip.
bool stem_pair_views_ok(const ConvParams<__half>& stem, const ConvParams<__half>& next);
// Computes next(stem(stem.x)) into next.y, each conv with its bias and SiLU (graph::ConvAttrs::silu()). Throws
// yolo12::Error where the pair or its views are not taken. No allocation, no synchronisation (capturable).
// max_grid > 0 caps the persistent grid (the tests, so that each block walks many tiles).
void launch_conv2d_stem_pair_f16(const ConvParams<__half>& stem, const ConvParams<__half>& next, cudaStream_t stream,
                                 int max_grid = 0);

}  // namespace yolo12::cuda::conv_detail
