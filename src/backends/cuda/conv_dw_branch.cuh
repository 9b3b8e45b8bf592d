// src/backends/cuda/conv_dw_branch.cuh - conv2d_dw_branch_f16 (conv_dw_branch.cu): the Detect head's class branch of
// YOLO11 / YOLO12 (depthwise 3x3, 1x1, depthwise 3x3, 1x1, then the 1x1 to the classes; graph/ops.hpp,
// chain_dw_branch) in one fp16 kernel, every map between the five convs in shared memory.
//
// Why: run as five convs, each is a pass over the map through memory, and each of the short-K ones is a few
// instructions per byte. On yolo12n at batch 32 (H100, twenty-ninth session's profile) the P3 branch's five kernels
// took 0.26 ms of the network's 2.5, where the branch's own traffic (64 channels in, 80 out at 80x80) is 0.02 ms at
// the copy bandwidth. Here DRAM sees the input and the classes' output only.
// Not part of the executor's interface: the CUDA bind of a ConvChain op of the branch form calls it (conv_chain.cu),
// which the executor makes only under variant f16_dw_branch and only for the channel counts the kernel takes.
// tests/gpu/test_dw_branch.cu checks it against the double reference and the five convs on their own kernels;
// tests/unit/test_dw_branch_layout.cpp checks the layout's regions on the CPU.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common.cuh"
#include "conv.cuh"

namespace yolo12::cuda::conv_detail {

constexpr int kDwBranchLinks = 5;

// The channel counts it takes, c0 -> c0 -> c1 -> c1 -> c2 -> c3 (the links' outputs): c0, c1, c2 multiples of 16 of
// at most 128, c3 1..128, and the layout within one block's shared memory on this device (the executor's filter for
// graph::fuse_dw_branches, before any shape is bound).
bool dw_branch_channels(int c0, int c1, int c2, int c3);
// The branch it takes: links 0 and 2 depthwise 3x3 at stride 1, pad 1 (groups = channels); links 1, 3 and 4 1x1 at
// stride 1, groups 1; each link reading the one before's output (same batch and size); channels as above.
bool dw_branch_supports(const ConvShape (&links)[kDwBranchLinks]);
// The views it takes besides: no residual and no gamma on any link; links[0].x 16-byte aligned with ldx a multiple of
// 8 (16-byte copies); every link's weights packed as conv_pack_weights packs them, 16-byte aligned; links[4].y any
// view (16-byte stores where c3, ldy and y allow them). The other links' x and y are not touched.
bool dw_branch_views_ok(const ConvParams<__half> (&links)[kDwBranchLinks]);
// Whether the executor runs the branch on this kernel at these shapes' batch rather than as its five convs (without
// tuning, which times both): where the tiles are at least four per SM. Fitted to the thirty-ninth session's H100
// timings (test_dw_branch "[.bench]", the depthwise links on m16n8k8): yolo12n's P3 branch (64 -> 80 -> 80, 106 KB,
// two blocks per SM) at batch 32 (1,600 tiles), 0.129 ms against the five convs' 0.251; yolo12s's P3 (128 -> 128,
// 216 KB, one block per SM) at batch 32, 0.286 against 0.339, and in the network 4.643 -> 4.596 ms. At batch 1 (50
// tiles) the five convs win (yolo12s's P3 0.031 against 0.025 ms). yolo12n's P4 at batch 32 (480 tiles, under four per
// SM) stays on the five convs: alone the kernel wins (0.074 against 0.082 ms), but in the network fusing it cost
// yolo12n 0.7 % (the five convs overlap the other branches' kernels better).
bool dw_branch_preferred(const ConvShape (&links)[kDwBranchLinks]);
// Computes link 4(link 3(... link 0(links[0].x))) into links[4].y, each link with its bias and SiLU (as its conv
// does; every map rounded to fp16 once, as it would be stored). Throws yolo12::Error where the branch or its views
// are not taken. No allocation, no synchronisation (capturable). max_grid > 0 caps the persistent grid (the tests, so
// that each block walks many tiles).
void launch_conv2d_dw_branch_f16(const ConvParams<__half> (&links)[kDwBranchLinks], cudaStream_t stream,
                                 int max_grid = 0);

}  // namespace yolo12::cuda::conv_detail
