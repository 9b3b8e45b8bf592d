// src/backends/cuda/dw_branch_layout.hpp - the layout arithmetic of conv2d_dw_branch_f16 (conv_dw_branch.cu): the
// five convs of the Detect head's class branch (graph/ops.hpp, chain_dw_branch: depthwise 3x3, 1x1, depthwise 3x3,
// 1x1, 1x1) in one kernel, every map between them in shared memory. Plain C++, so that
// tests/unit/test_dw_branch_layout.cpp checks it on the CPU.
//
// Channels: link 0 (dw) c0 -> c0, link 1 c0 -> c1, link 2 (dw) c1 -> c1, link 3 c1 -> c2, link 4 c2 -> c3 (c3 the
// classes, any count up to kMaxClasses; the others multiples of 16). A block computes a tile of 8 x 16 output pixels
// (kTH x kTW) through all five links:
//   input  In  (kTH + 4) x (kTW + 4) = 12 x 20 pixels x c0   (the tile with a halo of 2), zero outside the image;
//   dw1    D1  (kTH + 2) x (kTW + 2) = 10 x 18 pixels x c0   (a halo of 1: what link 1 needs for link 2), as 192 A
//                                                            rows (12 m16 tiles; rows past 180 repeat pixel 179);
//   1x1    P1  10 x 18 pixels x c1, zero outside the image (link 2's zero padding);
//   dw2    D2  8 x 16 pixels x c1;
//   1x1    P2  8 x 16 pixels x c2;
//   1x1    S   8 x 16 pixels x c3 (rounded up to 16), staged for the stores.
// Map pixel q of D1 / P1 sits at (q / 18, q % 18) of its 10 x 18 tile; its dw tap (ky, kx) is In pixel
// (q / 18 + ky, q % 18 + kx). Output pixel p = (p / 16, p % 16) reads P1 pixel (p / 16 + ky, p % 16 + kx).
//
// Shared memory, in bytes from the block's dynamic shared memory: the three 1x1 links' weights W1 (c1, r0), W2 (c2,
// r1), W3 (c3p, r2) halves stored [n][k] (zero rows past c3), the two depthwise links' weights (9, c0) and (9, c1)
// halves, the biases (c0 + 2 * c1 + c2 + c3p floats), then two regions that the steps take in turn:
//   region A: In (step 1 reads it), then P1 (written by step 2, read by step 3), then P2 (step 4 -> step 5);
//   region D: D1 (step 1 -> step 2), then D2 (step 3 -> step 4), then S (step 5, each warp its own 16 rows).
// A map is written only after a block barrier that follows the last read of what it overwrites.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::dw_branch {

constexpr int kTH = 8, kTW = 16;               // output tile: one m16 tile per output row, one row per warp
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMapH = kTH + 2, kMapW = kTW + 2;  // D1 / P1
constexpr int kInH = kTH + 4, kInW = kTW + 4;    // In
constexpr int kMapPixels = kMapH * kMapW;        // 180
constexpr int kMapRows = (kMapPixels + 15) / 16 * 16;  // 192: D1's A rows
constexpr int kOutPixels = kTH * kTW;            // 128
constexpr int kMaxChannels = 128;                // c0, c1, c2: multiples of 16, at most this
constexpr int kMaxClasses = 128;                 // c3
constexpr int kNChunk = 32;                      // output channels per warp pass of a 1x1 link
constexpr int kDwTiles = 2;                      // m16 tiles per depthwise unit (sharing the taps' B registers)
constexpr int kDwRows = kDwTiles * 16;           // A rows per depthwise unit
static_assert(kMapRows % kDwRows == 0 && kOutPixels % kDwRows == 0, "the depthwise links' rows come in whole units");

YOLO12_HOST_DEVICE inline int rup(int a, int b) { return (a + b - 1) / b * b; }
// Halves per pixel (or weight row) of c channels, c a multiple of 8: an odd number of 16-byte units, so that the 8
// row addresses of an ldmatrix phase fall in distinct banks.
YOLO12_HOST_DEVICE inline int pixel_halves(int c) { return (c / 8) % 2 == 1 ? c : c + 8; }
YOLO12_HOST_DEVICE inline int max_of(int a, int b) { return a > b ? a : b; }

struct Layout {
  int c0 = 0, c1 = 0, c2 = 0, c3 = 0, c3p = 0;  // c3p: c3 rounded up to 16 (W3's rows, S's columns)
  int r0 = 0, r1 = 0, r2 = 0, r3 = 0;           // halves per row of c0, c1, c2, c3p channels
  int w1_off = 0, w2_off = 0, w3_off = 0;       // bytes
  int dw1_off = 0, dw2_off = 0, bias_off = 0;
  int a_off = 0, d_off = 0, bytes = 0;
  int a_halves = 0, d_halves = 0;               // the two regions' sizes
};

YOLO12_HOST_DEVICE inline Layout layout(int c0, int c1, int c2, int c3) {
  Layout l;
  l.c0 = c0;
  l.c1 = c1;
  l.c2 = c2;
  l.c3 = c3;
  l.c3p = rup(c3, 16);
  l.r0 = pixel_halves(c0);
  l.r1 = pixel_halves(c1);
  l.r2 = pixel_halves(c2);
  l.r3 = pixel_halves(l.c3p);
  l.w1_off = 0;
  l.w2_off = l.w1_off + c1 * l.r0 * 2;
  l.w3_off = l.w2_off + c2 * l.r1 * 2;
  l.dw1_off = l.w3_off + l.c3p * l.r2 * 2;
  l.dw2_off = l.dw1_off + 9 * c0 * 2;
  l.bias_off = rup(l.dw2_off + 9 * c1 * 2, 16);
  l.a_off = rup(l.bias_off + (c0 + 2 * c1 + c2 + l.c3p) * 4, 16);
  l.a_halves = max_of(kInH * kInW * l.r0, max_of(kMapPixels * l.r1, kOutPixels * l.r2));
  l.d_off = l.a_off + rup(l.a_halves * 2, 16);
  l.d_halves = max_of(kMapRows * l.r0, max_of(kOutPixels * l.r1, kOutPixels * l.r3));
  l.bytes = l.d_off + rup(l.d_halves * 2, 16);
  return l;
}
// The biases' float offsets from bias_off: link i's at bias_at(l, i).
YOLO12_HOST_DEVICE inline int bias_at(const Layout& l, int link) {
  const int at[5] = {0, l.c0, l.c0 + l.c1, l.c0 + 2 * l.c1, l.c0 + 2 * l.c1 + l.c2};
  return at[link];
}

// The depthwise links' walk over the warps (steps 1 and 3): `units` units of two m16 tiles x 16 channels, unit u
// taken by warp u % kWarps. Where the last round has at most kWarps / 2 units, those run as 2 * left single m16
// tiles instead, one per warp (single tile i: unit pair_units + i / 2, its tile i % 2), so that no warp takes a
// pair more than the others while half the warps wait (yolo12n's P3, step 3: 20 units = 2 rounds and 4 left).
// Unit u is (tile pair u / cchunks, chunk u % cchunks): dw_pair, dw_single.
struct DwWalk {
  int pair_units = 0;    // units [0, pair_units) as pairs
  int single_tiles = 0;  // then this many single tiles, warp w < single_tiles the w-th
};
YOLO12_HOST_DEVICE inline DwWalk dw_walk(int units) {
  const int full = units / kWarps * kWarps, left = units - full;
  return left * kDwTiles <= kWarps ? DwWalk{full, kDwTiles * left} : DwWalk{units, 0};
}
// What a depthwise unit covers: m16 tiles from `tile`, the 16 channels of chunk `chunk`.
struct DwUnit {
  int tile = 0, chunk = 0;
};
// Pair unit u of a link with cchunks chunks: tiles [tile, tile + kDwTiles).
YOLO12_HOST_DEVICE inline DwUnit dw_pair(int u, int cchunks) {
  const int pair = u / cchunks;
  return {pair * kDwTiles, u - pair * cchunks};
}
// Single tile i (the i-th warp's) of a split last round: tile i % kDwTiles of pair unit pair_units + i / kDwTiles.
YOLO12_HOST_DEVICE inline DwUnit dw_single(const DwWalk& walk, int i, int cchunks) {
  const DwUnit pair = dw_pair(walk.pair_units + i / kDwTiles, cchunks);
  return {pair.tile + i % kDwTiles, pair.chunk};
}

// The channel counts the kernel takes (before the shared-memory check).
YOLO12_HOST_DEVICE inline bool channels_ok(int c0, int c1, int c2, int c3) {
  const auto mid = [](int c) { return c > 0 && c % 16 == 0 && c <= kMaxChannels; };
  return mid(c0) && mid(c1) && mid(c2) && c3 > 0 && c3 <= kMaxClasses;
}

// The tile walk: tile index t -> image, first output row and column.
struct Tile {
  int n = 0, oy0 = 0, ox0 = 0;
};
YOLO12_HOST_DEVICE inline int tiles_x(int w) { return (w + kTW - 1) / kTW; }
YOLO12_HOST_DEVICE inline int tiles_y(int h) { return (h + kTH - 1) / kTH; }
YOLO12_HOST_DEVICE inline long long tile_count(int batch, int h, int w) {
  return 1LL * batch * tiles_y(h) * tiles_x(w);
}
YOLO12_HOST_DEVICE inline Tile tile_at(int h, int w, int t) {
  const int tx = tiles_x(w), per_image = tx * tiles_y(h);
  const int n = t / per_image, r = t - n * per_image;
  return {n, (r / tx) * kTH, (r % tx) * kTW};
}

}  // namespace yolo12::cuda::dw_branch
