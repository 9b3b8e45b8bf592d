// src/backends/cuda/stem_mma_layout.hpp - the layout arithmetic of conv2d_stem_mma (conv_stem_mma.cu): the tiles,
// the input patch in shared memory, the K layout of a 3x3 window of RGB values (shared with the stem pair's stem,
// stem_pair_layout.hpp), which matrix element each register of the mma.sync m16n8k16 fragments holds, and the
// per-warp staging of the output. Plain C++, so that the kernel and its CPU replay
// (tests/unit/test_stem_mma_layout.cpp, which emulates the MMAs from the fragments) share one copy of it.
//
// The conv: 3x3, stride 2, any pad, 3 input channels -> c_out <= 128, as a GEMM with M = output pixels, N = c_out and
// K = the 27 values of a pixel's input window, laid out as 3 tap rows x 10 (window_k_offset): output pixel (oy, ox)
// reads input pixel (2 oy - pad + ky, 2 ox - pad + kx).
// A block: 256 threads = 8 warps; an output tile of kTH x kTW pixels of one image = 16 m16 tiles (16 neighbouring
// pixels of one row); warp w computes m16 tiles w and w + 8. The tile's input patch, kPH rows x kPW pixels x 3
// channels from input pixel (2 oy0 - pad, 2 ox0 - pad), zero outside the image, is written by stem_patch.cuh
// (rows of kRS halves, whole chunks of 8).
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace yolo12::cuda::stem_mma {

constexpr int kK = 3;       // the kernel size
constexpr int kCin = 3;     // input channels
constexpr int kStride = 2;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTH = 8, kTW = 32;        // output tile
constexpr int kM16PerRow = kTW / 16;    // m16 tiles per output row of the tile
constexpr int kM16 = kTH * kM16PerRow;  // m16 tiles per output tile
constexpr int kM16PerWarp = kM16 / kWarps;
static_assert(kM16 % kWarps == 0, "whole m16 tiles per warp");

YOLO12_HOST_DEVICE constexpr int align16(int bytes) { return (bytes + 15) / 16 * 16; }

// The K layout of a window of 3 x 3 pixels x 3 channels, in 32 columns (two k16 steps): column k = 10 ky + j reads
// value j of the window's tap row ky, and for j < 9 that is tap (ky, j / 3), channel j % 3; j = 9 (the next
// pixel's channel 0) and k = 30, 31 (values 0 and 1 of tap row 0) are read with zero weights. So the two K columns
// of every fragment register (k even) are two adjacent halves at an even offset: one 4-byte load, and every value
// read is a patch value (finite where the input is). The patch offset of column k from the window's value 0, tap
// row 0, with tap rows `row_stride` halves apart:
YOLO12_HOST_DEVICE constexpr int window_k_offset(int k, int row_stride) {
  return k < 30 ? (k / 10) * row_stride + k % 10 : k - 30;
}
// Lane's A registers at k16 step s: register r holds K columns 16 s + 2 (lane % 4) + 8 (r / 2) and the next (of
// row lane / 4 for r even, lane / 4 + 8 for r odd; a_element below), at patch offset koff[s][r / 2] from the row's
// window.
YOLO12_HOST_DEVICE inline void lane_k_offsets(int lane, int row_stride, int (&koff)[2][2]) {
  YOLO12_UNROLL
  for (int s = 0; s < 2; ++s)
    YOLO12_UNROLL
    for (int h = 0; h < 2; ++h) koff[s][h] = window_k_offset(16 * s + 2 * (lane % 4) + 8 * h, row_stride);
}
// Whether K column k has a weight, and which: tap (ky * 3 + kx), channel ci.
YOLO12_HOST_DEVICE constexpr bool window_k_tap(int k, int& tap, int& ci) {
  const int ky = k / 10, j = k % 10;
  tap = ky * 3 + j / 3;
  ci = j % 3;
  return k < 30 && j < 9;
}
// The packed weight of output channel n at tap, channel ci: (n, k_pad) rows, taps cin_pad apart (conv_pack_weights).
YOLO12_HOST_DEVICE inline long long w_offset(int n, int tap, int ci, int k_pad, int cin_pad) {
  return static_cast<long long>(n) * k_pad + tap * cin_pad + ci;
}

// The patch as stem_patch.cuh takes it: rows, pixels per row (one more than the windows cover: the tenth value of
// the last window's tap rows), channels, halves per row, chunks, the raw rows.
struct Geom {
  static constexpr int kCin = stem_mma::kCin;
  static constexpr int kPH = (kTH - 1) * kStride + kK;      // 17
  static constexpr int kPW = (kTW - 1) * kStride + kK + 1;  // 66
  static constexpr int kRS = (kPW * kCin + 7) / 8 * 8;      // 200
  static constexpr int kChunks = kRS / 8;
  static constexpr int kRawRS = kRS + 8;  // a row plus its misalignment (< 8 halves)
  static constexpr int kGranules = kRawRS / 8;
};
static_assert(((kTW - 1) * kStride) * kCin + 9 < Geom::kPW * kCin, "the last window's tenth value is a patch value");

// Whether the kernel for NT n8 blocks keeps its B fragments in shared memory (Smem::kBOff, read once per n8 block
// and m16 tile as one 16-byte load) rather than in registers: from 12 blocks on, the 48-64 registers of B left one
// block of 256 threads per SM (ptxas: 158 registers at 12 blocks, thirtieth session's `cuobjdump -res-usage`).
template <int NT>
constexpr bool b_in_smem() {
  return NT >= 12;
}

// Shared memory of the kernel for NT n8 blocks of output channels (bytes, each part 16-byte aligned).
template <int NT>
struct Smem {
  static constexpr int kStageRS = 8 * NT + 8;  // halves per staged output pixel (the rows of a D store in distinct
                                               // banks, 16-byte aligned)
  static constexpr int kPatchOff = 0;                                                   // half (kPH, kRS)
  static constexpr int kRawOff = kPatchOff + align16(Geom::kPH * Geom::kRS * 2);        // half (kPH, kRawRS)
  static constexpr int kBiasOff = kRawOff + align16(Geom::kPH * Geom::kRawRS * 2);      // float (8 NT)
  static constexpr int kGammaOff = kBiasOff + align16(8 * NT * 4);                      // float (8 NT)
  static constexpr int kStageOff = kGammaOff + align16(8 * NT * 4);                     // half (kWarps, 16, kStageRS)
  static constexpr int kStageWarp = 16 * kStageRS;                                      // halves per warp
  static constexpr int kBOff = kStageOff + align16(kWarps * kStageWarp * 2);  // uint32 (NT, 32 lanes, 4) where
                                                                              // b_in_smem: b_smem_index
  static constexpr int kBytes = kBOff + (b_in_smem<NT>() ? NT * 32 * 4 * 4 : 0);
};

// An output tile of a persistent stem kernel (this one and conv2d_stem_pair_f16's).
struct Tile {
  int n = 0, oy0 = 0, ox0 = 0;  // the image and the output tile's first row and column
};
// Tile t of a grid of TH x TW tiles: columns fastest, then rows, then images.
template <int TH, int TW>
YOLO12_HOST_DEVICE inline Tile tile_at(long long t, int tiles_x, int tiles_y) {
  Tile tile;
  tile.ox0 = static_cast<int>(t % tiles_x) * TW;
  const long long r = t / tiles_x;
  tile.oy0 = static_cast<int>(r % tiles_y) * TH;
  tile.n = static_cast<int>(r / tiles_y);
  return tile;
}
YOLO12_HOST_DEVICE inline Tile tile_of(long long t, int tiles_x, int tiles_y) {
  return tile_at<kTH, kTW>(t, tiles_x, tiles_y);
}
// The input pixel of the tile's patch element (0, 0).
YOLO12_HOST_DEVICE inline void patch_origin(const Tile& t, int pad, int& iy0, int& ix0) {
  iy0 = t.oy0 * kStride - pad;
  ix0 = t.ox0 * kStride - pad;
}

// m16 tile mt (< kM16) of the output tile: its output row and first output column.
YOLO12_HOST_DEVICE inline void m16_origin(int mt, int& oy, int& ox0) {
  oy = mt / kM16PerRow;
  ox0 = (mt - oy * kM16PerRow) * 16;
}
// Output pixel (oy, ox) of the tile: the patch offset of its window's value 0, tap row 0.
YOLO12_HOST_DEVICE inline int pixel_offset(int oy, int ox) { return kStride * oy * Geom::kRS + kStride * ox * kCin; }

// Fragments of mma.sync m16n8k16 (mma.cuh), for lane `lane`:
//   A: register r (0-3), half h (0-1) of k step s (0-1): row (0-15) of the m16 tile and K column;
//   B: register r (0-1), half h of k step s of the n8 block j: output channel and K column;
//   D: register r (0-3) of the n8 block j: row and output channel.
YOLO12_HOST_DEVICE inline void a_element(int lane, int s, int r, int h, int& row, int& k) {
  row = lane / 4 + 8 * (r % 2);
  k = 16 * s + 2 * (lane % 4) + 8 * (r / 2) + h;
}
YOLO12_HOST_DEVICE inline void b_element(int lane, int s, int j, int r, int h, int& n, int& k) {
  n = 8 * j + lane / 4;
  k = 16 * s + 2 * (lane % 4) + 8 * r + h;
}
YOLO12_HOST_DEVICE inline void d_element(int lane, int j, int r, int& row, int& n) {
  row = lane / 4 + 8 * (r / 2);
  n = 8 * j + 2 * (lane % 4) + r % 2;
}
// The packed weight that half h of register r of lane's B fragment of n8 block j at k16 step s holds (its offset in
// (n, k_pad) rows, taps cin_pad apart), or -1 where the element is zero: past n_g channels, or a K column without a
// weight.
YOLO12_HOST_DEVICE inline long long b_weight_offset(int lane, int s, int j, int r, int h, int n_g, int k_pad,
                                                    int cin_pad) {
  int n, k, tap, ci;
  b_element(lane, s, j, r, h, n, k);
  return n < n_g && window_k_tap(k, tap, ci) ? w_offset(n, tap, ci, k_pad, cin_pad) : -1;
}
// Lane's B fragments of NT n8 blocks at both k16 steps, as mma.sync takes them: bf[j][s][r] holds halves h = 0 (low
// 16 bits) and 1 of register r (b_register), bits(offset) giving the 16 bits of the packed weight at that offset
// (zero where b_weight_offset is -1). The kernels keep them in registers for their whole life (the loops are
// unrolled), except conv2d_stem_mma where b_in_smem.
template <typename Bits>
YOLO12_HOST_DEVICE inline std::uint32_t b_register(int lane, int s, int j, int r, int n_g, int k_pad, int cin_pad,
                                                   const Bits& bits) {
  std::uint32_t v = 0;
  YOLO12_UNROLL
  for (int h = 0; h < 2; ++h) {
    const long long o = b_weight_offset(lane, s, j, r, h, n_g, k_pad, cin_pad);
    v |= static_cast<std::uint32_t>(o >= 0 ? bits(o) : 0u) << (16 * h);
  }
  return v;
}
template <int NT, typename Bits>
YOLO12_HOST_DEVICE inline void b_fragments(int lane, int n_g, int k_pad, int cin_pad, const Bits& bits,
                                           std::uint32_t (&bf)[NT][2][2]) {
  YOLO12_UNROLL
  for (int j = 0; j < NT; ++j)
    YOLO12_UNROLL
    for (int s = 0; s < 2; ++s)
      YOLO12_UNROLL
      for (int r = 0; r < 2; ++r) bf[j][s][r] = b_register(lane, s, j, r, n_g, k_pad, cin_pad, bits);
}
// Where b_in_smem: register r of k step s of lane's B fragment of n8 block j is uint32 b_smem_index(j, lane, s, r)
// of Smem::kBOff, so that a lane reads both k steps of block j as one 16-byte load (32 lanes: 512 contiguous bytes).
YOLO12_HOST_DEVICE constexpr int b_smem_index(int j, int lane, int s, int r) { return (j * 32 + lane) * 4 + 2 * s + r; }
// The staged store (views with 16-byte output stores): D element (row, n) goes to the warp's stage at
// row * kStageRS + n; then chunk i (< 16 * chunks, chunks = c_out / 8) of the stage, pixel row i / chunks, channels
// 8 (i % chunks) .. + 7, is one 16-byte store to the output.
template <int NT>
YOLO12_HOST_DEVICE inline int stage_offset(int row, int n) {
  return row * Smem<NT>::kStageRS + n;
}
YOLO12_HOST_DEVICE inline void stage_chunk(int i, int chunks, int& row, int& c0) {
  row = i / chunks;
  c0 = (i - row * chunks) * 8;
}

}  // namespace yolo12::cuda::stem_mma
