// src/backends/cuda/stem_mma_layout.hpp - the layout arithmetic of conv2d_stem_mma (conv_stem_mma.cu): the tile,
// the input patch in shared memory, and which matrix element each register of the mma.sync m16n8k16 fragments
// holds. Plain C++, so that the kernel and its CPU replay (tests/unit/test_stem_mma_layout.cpp, which emulates
// the MMAs from the fragments) share one copy of it.
//
// The conv: 3x3 over CIN (<= 3) input channels at stride S, as a GEMM with K = 9 CIN <= 32 (two k16 steps,
// zero past K): K column k = tap * CIN + c, tap = ky * 3 + kx; output pixel (oy, ox) reads input pixel
// (S oy - pad + ky, S ox - pad + kx). (The packed weights pad each tap to cin_pad = 8 channels: w_offset.)
// A block: 128 threads = 4 warps; an output tile of 8 rows x 64 columns of one image = 32 m16 tiles (16
// neighbouring pixels of one row); warp w computes m16 tiles w, w + 4, ... The input patch of the tile,
// ((8 - 1) S + 3) rows x ((64 - 1) S + 3) pixels x CIN halves, zero outside the image, is one run of kRun
// halves per row, rows kRS halves apart.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::stem_mma {

constexpr int kK = 3;  // the kernel size
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kTH = 8, kTW = 64;        // output tile
constexpr int kM16PerRow = kTW / 16;    // m16 tiles per output row of the tile
constexpr int kM16 = kTH * kM16PerRow;  // m16 tiles per output tile
constexpr int kM16PerWarp = kM16 / kWarps;

template <int CIN, int S>
struct Geom {
  static_assert(CIN >= 1 && 9 * CIN <= 32, "K = 9 CIN fits two k16 steps");
  static constexpr int kKK = kK * kK * CIN;       // K columns that are not zero
  static constexpr int kPH = (kTH - 1) * S + kK;  // patch rows
  static constexpr int kPW = (kTW - 1) * S + kK;  // patch pixels per row
  static constexpr int kRun = kPW * CIN;          // halves of one patch row
  static constexpr int kRS = (kRun + 1) / 2 * 2;  // halves between patch rows
  static constexpr int kPatch = kPH * kRS;        // halves of the patch
};

// Element i (< kRun) of a patch row: its pixel within the row and its channel.
template <int CIN>
YOLO12_HOST_DEVICE inline void patch_element(int i, int& px, int& c) {
  px = i / CIN;
  c = i - px * CIN;
}

// m16 tile mt (< kM16) of the output tile: its output row and first output column.
YOLO12_HOST_DEVICE inline void m16_origin(int mt, int& oy, int& ox0) {
  oy = mt / kM16PerRow;
  ox0 = (mt - oy * kM16PerRow) * 16;
}

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

// K column k (< kKK): its offset in the patch from the tile's output pixel (oy, ox) at tap (0, 0).
template <int CIN, int S>
YOLO12_HOST_DEVICE inline int k_offset(int k) {
  const int tap = k / CIN, c = k - tap * CIN;
  const int ky = tap / kK, kx = tap - ky * kK;
  return ky * Geom<CIN, S>::kRS + kx * CIN + c;
}
// Output pixel (oy, ox) of the tile: the patch offset of its tap (0, 0).
template <int CIN, int S>
YOLO12_HOST_DEVICE inline int pixel_offset(int oy, int ox) {
  return S * oy * Geom<CIN, S>::kRS + S * ox * CIN;
}
// The packed weight of output channel n at K column k (< kKK): (n, k_pad) rows, taps cin_pad apart.
template <int CIN>
YOLO12_HOST_DEVICE inline long long w_offset(int n, int k, int k_pad, int cin_pad) {
  const int tap = k / CIN, c = k - tap * CIN;
  return static_cast<long long>(n) * k_pad + tap * cin_pad + c;
}

}  // namespace yolo12::cuda::stem_mma
