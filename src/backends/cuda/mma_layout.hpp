// src/backends/cuda/mma_layout.hpp - where each lane of a warp points ldmatrix for mma.sync m16n8k16's fragments
// (mma.cuh has the instructions and the fragment layout). Plain C++, so that the CPU replays of the kernels
// (tests/unit/test_chain_layout.cpp) and the GPU tests' emulations take the kernels' own addressing.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::conv_detail {

// Where lane `lane` points ldmatrix (offsets in halves from the tile's start) for mma.cuh's load_a_frag (A: rows
// [row0, row0 + 16) x K columns [k0, k0 + 16) of a row-major tile), load_b_frag_pair (B stored [n][k]: channels
// [n0, n0 + 16) as two n8 blocks) and load_b_frag (channels [n0, n0 + 8)); tile rows are row_halves apart.
YOLO12_HOST_DEVICE inline int a_frag_lane_offset(int row_halves, int row0, int k0, int lane) {
  return (row0 + lane % 16) * row_halves + k0 + (lane / 16) * 8;
}
YOLO12_HOST_DEVICE inline int b_pair_lane_offset(int row_halves, int n0, int k0, int lane) {
  return (n0 + (lane / 16) * 8 + lane % 8) * row_halves + k0 + ((lane / 8) % 2) * 8;
}
YOLO12_HOST_DEVICE inline int b_single_lane_offset(int row_halves, int n0, int k0, int lane) {
  const int l = lane % 16;  // .x2 reads the addresses of lanes 0..15
  return (n0 + l % 8) * row_halves + k0 + (l / 8) * 8;
}

}  // namespace yolo12::cuda::conv_detail
