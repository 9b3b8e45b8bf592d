// src/backends/cuda/conv_halo_pair.cuh - conv2d_halo_pair_f16 (conv_halo_pair.cu): two 3x3 convs at stride 1 (a
// bottleneck's cv1 and cv2, + its input) in one fp16 kernel, so that cv1's map never goes through memory. yolo12n runs
// eight such pairs of 8-32 channels: on the H200 at batch 32 their sixteen kernels took 0.42 ms of its 2.74 ms, 6x
// their floors (0.069 ms; docs/results/2026-12-05-session21/call1-test/profile_default.json).
// Not part of the executor's interface: the CUDA bind of a ConvChain op of the stride-1 pair form calls it
// (conv_chain.cu), which the executor makes only under variant f16_halo_pair (on since the twenty-fourth session), and
// only for the channel counts the kernel takes. tests/gpu/test_halo_pair.cu checks it against the double reference
// and against the two convs on the GPU; tests/unit/test_halo_pair_layout.cpp replays its addressing on the CPU.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common.cuh"
#include "conv.cuh"

namespace yolo12::cuda::conv_detail {

// The channel counts it takes: c_in, c_mid and c_out each a multiple of 8 of at most 32 (the executor's filter for
// graph::fuse_stride1_pairs, before any shape is bound).
bool halo_pair_channels(int c_in, int c_mid, int c_out);
// The pair it takes: `first` c_in -> c_mid and `second` c_mid -> c_out, both 3x3, stride 1, pad 1, dilation 1, groups 1,
// channels as above; second's input is first's output (same batch and size). Any size and batch.
bool halo_pair_supports(const ConvShape& first, const ConvShape& second);
// The views it takes besides: no residual on `first` (second's is read from memory, any view the GEMM epilogue takes);
// first.x 16-byte aligned with ldx a multiple of 8 (16-byte copies); both weights packed as for every GEMM conv
// (conv_pack_weights), 16-byte aligned. first.y and second.x are not read: the map stays on chip.
bool halo_pair_views_ok(const ConvParams<__half>& first, const ConvParams<__half>& second);
// Output rows per warp (halo_pair_layout.hpp: tiles of 8 * wr x 16 pixels) for the pair at this batch: 2 where its
// shared memory lets two or more blocks share an SM and the tiles fill those block slots twice over, else 1 (fitted on
// an H100).
int halo_pair_rows_per_warp(const ConvShape& first, const ConvShape& second, const DeviceInfo& dev);
// Computes second(first(first.x)) (+ second's residual) into second.y, each conv with its bias, SiLU and gamma. Throws
// yolo12::Error where the pair or its views are not taken. No allocation, no synchronisation (capturable).
// rows_per_warp 0: halo_pair_rows_per_warp's; max_grid > 0 caps the persistent grid (the tests, so that each block
// walks many tiles).
void launch_conv2d_halo_pair_f16(const ConvParams<__half>& first, const ConvParams<__half>& second, cudaStream_t stream,
                                 int rows_per_warp = 0, int max_grid = 0);

}  // namespace yolo12::cuda::conv_detail
