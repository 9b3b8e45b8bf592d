// src/backends/cuda/stem_pair_layout.hpp - the layout arithmetic of conv2d_stem_pair_f16 (conv_stem_pair.cu): the
// tiles, the input patch and the stem's map in shared memory, which thread computes which map values, and which
// element each register of the mma.sync m16n8k16 fragments holds. Plain C++, so that the kernel and its CPU replay
// (tests/unit/test_stem_pair_layout.cpp, which emulates the MMAs from the fragments) share one copy of it.
//
// The pair: the stem, 3 -> C1 channels, and the next conv, C1 -> C2, both 3x3, stride 2, pad 1. Output pixel
// (oy, ox) of the next conv reads map pixel (2 oy - 1 + ky, 2 ox - 1 + kx), and map pixel (sy, sx) reads input
// pixel (2 sy - 1 + ky, 2 sx - 1 + kx); taps outside the map or the image read zero.
// A block: 256 threads = 8 warps; a tile is 8 output rows x 16 output columns of one image. Per tile:
// - the input patch: kIH rows x kPW pixels x 3 channels from input pixel (4 oy0 - 3, 4 ox0 - 3) (patch_origin), fp16
//   as read, rows kXS halves apart (kPW * 3 = 204 values, then zeros to 208: the patch is written in chunks of 8,
//   stem_patch.cuh), zero outside the image;
// - the map: kSH x kSW pixels from map pixel (2 oy0 - 1, 2 ox0 - 1), fp16, kC1S halves per pixel (C1 + 4: the rows
//   of an A fragment fall in distinct banks), zero outside the map. The stem's work is split into items of kPP
//   consecutive map pixels of one map row x kCB channels; a thread takes one item at a time, reads its input window
//   (kWin halves per tap row) as half2s and the weights of its kCB channels as float4s that are the same for every
//   thread of a warp (one broadcast), so each weight read feeds kPP x 4 FMAs. Or (variant f16_stem_pair_mma) the
//   map is a GEMM on mma.sync, M = the map's pixels, K = the 27 window values in 32 columns (stem_a_offset);
// - the next conv as a GEMM: M = the tile's 128 pixels, warp w taking output row w (16 pixels, row m = column
//   ox - ox0), N = C2, K = 9 taps x C1 channels, column k = tap * C1 + c, tap = ky * 3 + kx, as the GEMM packing
//   orders the weights; its weights in shared memory as (C2, kK1S) halves, rows padded by 8 (distinct banks too).
#pragma once

#include "core/host_device.hpp"
#include "stem_mma_layout.hpp"

namespace yolo12::cuda::stem_pair {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTH = 8;   // output rows per tile: one per warp
constexpr int kTW = 16;  // output columns per tile: the 16 rows of an m16 fragment
static_assert(kTH == kWarps, "one warp per output row of the tile");

YOLO12_HOST_DEVICE constexpr int align16(int bytes) { return (bytes + 15) / 16 * 16; }

template <int C1, int C2>
struct Geom {
  static_assert(C1 % 16 == 0 && C2 % 8 == 0, "k16 steps over the map's channels, n8 tiles over the output's");
  static constexpr int kSH = 2 * kTH + 1;  // map rows of a tile
  static constexpr int kSW = 2 * kTW + 1;  // map columns
  static constexpr int kSP = kSH * kSW;    // map pixels
  static constexpr int kIH = 2 * kSH + 1;  // patch rows
  static constexpr int kIW = 2 * kSW + 1;  // patch pixels per row the stem's windows cover
  static constexpr int kPW = kIW + 1;      // patch pixels per row: one more, read by the mma stem's tenth window
                                           // value per tap row, with a zero weight (window_k_offset)
  static constexpr int kXV = kPW * 3;      // values per patch row
  static constexpr int kXS = (kXV + 7) / 8 * 8;  // halves per patch row: whole chunks of 8 (stem_patch.cuh)
  // The patch's geometry as stem_patch.cuh takes it: rows, pixels per row, channels, chunks, the raw rows.
  static constexpr int kCin = 3;
  static constexpr int kPH = kIH;
  static constexpr int kRS = kXS;
  static constexpr int kChunks = kRS / 8;
  static constexpr int kRawRS = kRS + 8;  // halves per raw row: a row plus its misalignment (< 8)
  static constexpr int kGranules = kRawRS / 8;
  static constexpr int kC1S = C1 + 4;      // halves per map pixel
  static constexpr int kK1 = 9 * C1;       // the next conv's K
  static constexpr int kK1S = kK1 + 8;     // halves per weight row
  // The stem's items: kPP map pixels of a row x kCB channels; kSG items across a map row, kCB-channel blocks slowest,
  // so a warp's items share their weights (except the one warp that straddles two blocks).
  static constexpr int kPP = 3;
  static constexpr int kCB = 16;
  static constexpr int kSG = kSW / kPP;
  static_assert(kSW % kPP == 0, "whole items across a map row");
  static_assert(C1 % kCB == 0, "whole channel blocks");
  static constexpr int kItems = (C1 / kCB) * kSH * kSG;
  static constexpr int kWin = (2 * (kPP - 1) + 3) * 3;  // values of an item's window per tap row: kWin / 2 half2
                                                        // reads, then one half where kWin is odd
  static_assert(kXS % 2 == 0 && (2 * kPP * 3) % 2 == 0, "windows start 4-byte aligned");
  // The stem on mma.sync (stem_a_offset): m16 tiles over the map's pixels, the last one partly past kSP.
  static constexpr int kStemMTiles = (kSP + 15) / 16;
  static_assert(2 * (kSW - 1) * 3 + 9 < kXV, "the tenth value of the last window's tap row is a patch value");
  // Shared memory (bytes), each part 16-byte aligned.
  static constexpr int kW0Off = 0;                                   // float (27, C1): [tap * 3 + ci][c]
  static constexpr int kB0Off = kW0Off + align16(27 * C1 * 4);       // float (C1)
  static constexpr int kB1Off = kB0Off + align16(C1 * 4);            // float (C2)
  static constexpr int kXinOff = kB1Off + align16(C2 * 4);           // half (kIH, kXS): the patch
  static constexpr int kRawOff = kXinOff + align16(kIH * kXS * 2);   // half (kIH, kRawRS): the next tile's raw rows
  static constexpr int kMapOff = kRawOff + align16(kIH * kRawRS * 2);  // half (kSP, kC1S): the map
  static constexpr int kW1Off = kMapOff + align16(kSP * kC1S * 2);   // half (C2, kK1S)
  static constexpr int kBytes = kW1Off + align16(C2 * kK1S * 2);
};

using Tile = stem_mma::Tile;
// Tile t of the grid: columns fastest, then rows, then images.
YOLO12_HOST_DEVICE inline Tile tile_of(long long t, int tiles_x, int tiles_y) {
  return stem_mma::tile_at<kTH, kTW>(t, tiles_x, tiles_y);
}

// The input pixel of a tile's patch element (0, 0): 3 map rows and 3 input rows of padding reach above and left.
YOLO12_HOST_DEVICE inline void patch_origin(const Tile& t, int& iy0, int& ix0) {
  iy0 = 4 * t.oy0 - 3;
  ix0 = 4 * t.ox0 - 3;
}

// Stem item i (< kItems): its channel block cb (channels cb * kCB ..), map row syl and first map column sxl of the
// tile, and the patch half of its window's first value (tap row 0; tap row ky starts kXS * ky later).
template <int C1, int C2>
YOLO12_HOST_DEVICE inline void stem_item(int i, int& cb, int& syl, int& sxl, int& window0) {
  using G = Geom<C1, C2>;
  cb = i / (G::kSH * G::kSG);
  const int r = i % (G::kSH * G::kSG);
  syl = r / G::kSG;
  sxl = (r % G::kSG) * G::kPP;
  window0 = 2 * syl * G::kXS + 2 * sxl * 3;
}
// The window value that tap (kx, ci) of the item's pixel q (0..kPP-1) reads, within a tap row of the window.
YOLO12_HOST_DEVICE constexpr int window_tap(int q, int kx, int ci) { return (2 * q + kx) * 3 + ci; }

// The stem on mma.sync (variant f16_stem_pair_mma, conv2d_stem_pair_f16's kStemMma): the map as a GEMM. M = the
// tile's kSP map pixels, pixel p = syl * kSW + sxl, in kStemMTiles m16 tiles (rows past kSP repeat pixel kSP - 1 and
// are not stored); N = C1; K = the window's 27 values in 32 columns, as conv2d_stem_mma lays them out
// (stem_mma_layout.hpp: window_k_offset, window_k_tap): each register's two K columns are one 4-byte load.
// The patch half of window value 0, tap row 0, of map pixel p.
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int stem_pixel_base(int p) {
  using G = Geom<C1, C2>;
  const int syl = p / G::kSW, sxl = p % G::kSW;
  return 2 * syl * G::kXS + 2 * sxl * 3;
}
// The map pixel of row m (0..15) of m16 tile mt, clamped to the map (rows past it compute a copy, not stored).
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int stem_row_pixel(int mt, int m) {
  const int p = mt * 16 + m;
  return p < Geom<C1, C2>::kSP ? p : Geom<C1, C2>::kSP - 1;
}
// Register r (0..3) of lane l's A fragment at k16 step s of m16 tile mt: the patch offset of its two halves (K
// columns k, k + 1 of row m, as stem_mma::a_element places them): the row's pixel base plus the lane's K offset
// (stem_mma::lane_k_offsets, as the kernel keeps them).
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int stem_a_offset(int mt, int lane, int r, int s) {
  int m, k, koff[2][2];
  stem_mma::a_element(lane, s, r, 0, m, k);
  stem_mma::lane_k_offsets(lane, Geom<C1, C2>::kXS, koff);
  return stem_pixel_base<C1, C2>(stem_row_pixel<C1, C2>(mt, m)) + koff[s][r >> 1];
}
// The B fragments are stem_mma's (b_element, b_weight_offset with n_g = C1).
// Accumulator e (0..3) of n8 tile j of lane l for m16 tile mt: its map pixel (kSP or more: not stored) and channel
// (the first of the pair e, e + 1 for e = 0, 2).
YOLO12_HOST_DEVICE inline void stem_acc_target(int mt, int lane, int j, int e, int& p, int& c) {
  int row;
  stem_mma::d_element(lane, j, e, row, c);
  p = mt * 16 + row;
}

// Register r (0..3) of the A fragment of warp w, lane l, at the k16 step (ky, kx, cb): the map offset (halves) of
// the two halves it holds, K columns k and k + 1. Rows: lane / 4 (registers 0, 2) and lane / 4 + 8 (1, 3); K
// columns 2 (lane % 4) (0, 1) and 2 (lane % 4) + 8 (2, 3) within the step.
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int a_offset(int warp, int lane, int r, int ky, int kx, int cb) {
  using G = Geom<C1, C2>;
  const int m = lane / 4 + (r & 1) * 8;      // the output column within the tile
  const int c = cb * 16 + 2 * (lane % 4) + (r >> 1) * 8;
  return ((2 * warp + ky) * G::kSW + 2 * m + kx) * G::kC1S + c;
}
// Register r (0..1) of the B fragment of n8 tile j, lane l, at K column k0 of the step: the offset (halves) in the
// weights of the two halves it holds, K columns k0 + 2 (lane % 4) + 8 r and the next, channel 8 j + lane / 4.
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int b_offset(int lane, int r, int j, int k0) {
  return (j * 8 + lane / 4) * Geom<C1, C2>::kK1S + k0 + 2 * (lane % 4) + 8 * r;
}
// K column of the step (ky, kx, cb).
template <int C1, int C2>
YOLO12_HOST_DEVICE inline int k_of(int ky, int kx, int cb) {
  return (ky * 3 + kx) * C1 + cb * 16;
}
// Accumulator e (0..3) of n8 tile j, warp w, lane l: its output pixel and channel (the first of the pair e, e + 1
// for e = 0, 2).
YOLO12_HOST_DEVICE inline void acc_target(const Tile& t, int warp, int lane, int j, int e, int& oy, int& ox, int& c) {
  oy = t.oy0 + warp;
  ox = t.ox0 + lane / 4 + (e >= 2 ? 8 : 0);
  c = j * 8 + 2 * (lane % 4) + (e & 1);
}

}  // namespace yolo12::cuda::stem_pair
