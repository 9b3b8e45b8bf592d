// src/backends/cuda/conv_stem.cuh - conv2d_stem_f16 (conv_stem.cu): the fp16 direct convolution for the
// network's stem and other convs with very few input channels (RGB in), NHWC, fp32 accumulation.
// Not part of the executor's interface: conv.cu decides when to call it.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv.cuh"

namespace yolo12::cuda::conv_detail {

// groups 1, 1 <= c_in <= 4, 8 <= c_out <= 128 with c_out % 8 == 0 (yolo12n..x: 16, 32, 64, 64, 96), k in {1, 3, 5, 7}, stride 1 or 2,
// dilation 1, pad >= 0. Any batch, input size, views (x only 2-byte aligned, any ldx >= c_in), weight
// alignment (read as scalars) and output / residual alignment (16-byte stores where they allow it).
bool conv2d_stem_f16_supports(const ConvShape& s);
// p: a shape conv2d_stem_f16_supports; w packed as for every GEMM conv (gemm_layout). No allocation, no
// synchronisation (capturable).
void launch_conv2d_stem_f16(const ConvParams<__half>& p, cudaStream_t stream);

// conv2d_stem_mma (conv_stem_mma.cu): the stem on the tensor cores. supports: groups 1, c_in 3, k 3, stride 2,
// dilation 1, any pad, 1 <= c_out <= 128; any views and alignment (element loads; half2 stores where they
// allow). max_grid > 0 caps the persistent grid (the tests).
bool stem_mma_supports(const ConvShape& s);
// Where conv_select takes conv2d_stem_mma over conv2d_stem_f16 (under variant f16_stem_mma, on): a shape it supports
// with at most 64 output channels (yolo12m and l's 3->64 faster on the tensor cores, yolo12x's 96 not; measured in
// the network, docs/kernels-conv.md), or up to 128 under variant f16_stem_mma_wide (on: yolo12x's 96 faster since
// the thirty-first session's two blocks per SM). Tuning times it on every shape it supports.
bool stem_mma_preferred(const ConvShape& s);
void launch_conv2d_stem_mma(const ConvParams<__half>& p, cudaStream_t stream, int max_grid = 0);

}  // namespace yolo12::cuda::conv_detail
