// src/backends/cuda/halo_pair_layout.hpp - the layout arithmetic of conv2d_halo_pair_f16 (conv_halo_pair.cu): two
// 3x3 convs at stride 1 (a bottleneck's cv1 and cv2, graph/ops.hpp chain_stride1_pair) in one kernel, cv1's map kept
// in shared memory. Plain C++, so that tests/unit/test_halo_pair_layout.cpp replays the kernel's addressing on the
// CPU without a GPU.
//
// A block computes a tile of TH x 16 output pixels (TH = 8 * WR, WR output rows per warp, 8 warps) of all c_out
// channels:
//   input tile  (TH + 4) x 20 pixels x c_in   (the output tile with a halo of 2), zero outside the image;
//   map tile    (TH + 2) x 18 pixels x c_mid  (cv1's outputs the tile's cv2 reads: a halo of 1), zero outside the
//               image (cv2's zero padding of cv1's map, not cv1 of a padded input);
//   output      TH x 16 pixels.
// Step 1, cv1: the map tile's pixels in order, as m16 tiles (the last padded by repeating its last pixel); map pixel
// q sits at (q / 18, q % 18) of the map tile, and its tap (ky, kx) is input tile pixel (q / 18 + ky, q % 18 + kx).
// Step 2, cv2: warp w takes output rows w * WR .. w * WR + WR - 1 of the tile, one m16 tile each (its 16 columns);
// output pixel (y, x) reads map tile pixel (y + ky, x + kx) at tap (ky, kx).
// Both steps read A rows through a K table as conv2d_halo_f16 does: 8-column group j of a conv's K (tap j * 8 /
// cin_pad, channels j * 8 % cin_pad ..) is an offset in halves from a pixel's own row in its tile, or -1 past K.
//
// Shared memory, in bytes from the block's dynamic shared memory: B1 (bn1, b1_row) and B2 (bn2, b2_row) halves (the
// packed weights, zero rows past the real channels), the two K tables (ints), 16 zero bytes, two input tile stages,
// the map tile, and each warp's (8, c_row) fp32 staging rows for the 16-byte stores.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::halo_pair {

constexpr int kTW = 16;                    // output tile columns: one m16 tile per output row
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMapW = kTW + 2;             // map tile columns
constexpr int kInW = kTW + 4;              // input tile columns
constexpr int kMaxChannels = 32;           // c_in, c_mid and c_out each at most this, multiples of 8
constexpr int kStages = 2;                 // input tile stages: the next tile's input loads during this one
constexpr int kStageRows = 8;              // output rows a warp stages before its 16-byte stores

YOLO12_HOST_DEVICE inline int rup(int a, int b) { return (a + b - 1) / b * b; }

// Halves per pixel of a tile of c channels (c a multiple of 8): an odd number of 16-byte units, so that the 8 row
// addresses of an ldmatrix phase (8 neighbouring pixels) fall in distinct banks.
YOLO12_HOST_DEVICE inline int pixel_halves(int c) { return (c / 8) % 2 == 1 ? c : c + 8; }

struct Layout {
  int wr = 1;                   // output rows per warp: TH = 8 * wr
  int th = 8, map_h = 10, in_h = 12;
  int map_pixels = 0;           // map_h * kMapW
  int map_mtiles = 0;           // ceil(map_pixels / 16)
  int c_in = 0, c_mid = 0, c_out = 0;
  int bn1 = 0, bn2 = 0;         // N tiles: c_mid and c_out rounded up to 8, 16 or 32
  int k1 = 0, k2 = 0;           // real K: 9 * c_in, 9 * c_mid
  int k16_1 = 0, k16_2 = 0;     // K rounded up to 16: the columns the MMAs read
  int in_row = 0, map_row = 0;  // halves per input / map tile pixel
  int b1_row = 0, b2_row = 0;   // halves per weight row: k16 + 8
  int c_row = 0;                // floats per staging row
  int in_stage_halves = 0;      // one input tile
  int b2_off = 0, tab1_off = 0, tab2_off = 0, zero_off = 0, in_off = 0, map_off = 0, c_off = 0, bytes = 0;
};

YOLO12_HOST_DEVICE inline int n_tile(int c) { return c <= 8 ? 8 : c <= 16 ? 16 : 32; }

YOLO12_HOST_DEVICE inline Layout layout(int c_in, int c_mid, int c_out, int wr) {
  Layout l;
  l.wr = wr;
  l.th = 8 * wr;
  l.map_h = l.th + 2;
  l.in_h = l.th + 4;
  l.map_pixels = l.map_h * kMapW;
  l.map_mtiles = (l.map_pixels + 15) / 16;
  l.c_in = c_in;
  l.c_mid = c_mid;
  l.c_out = c_out;
  l.bn1 = n_tile(c_mid);
  l.bn2 = n_tile(c_out);
  l.k1 = 9 * c_in;
  l.k2 = 9 * c_mid;
  l.k16_1 = rup(l.k1, 16);
  l.k16_2 = rup(l.k2, 16);
  l.in_row = pixel_halves(c_in);
  l.map_row = pixel_halves(c_mid);
  l.b1_row = l.k16_1 + 8;
  l.b2_row = l.k16_2 + 8;
  l.c_row = l.bn2 == 8 ? 24 : l.bn2 + 8;
  l.in_stage_halves = l.in_h * kInW * l.in_row;
  l.b2_off = l.bn1 * l.b1_row * 2;
  l.tab1_off = l.b2_off + l.bn2 * l.b2_row * 2;
  l.tab2_off = l.tab1_off + (l.k16_1 / 8) * 4;
  l.zero_off = rup(l.tab2_off + (l.k16_2 / 8) * 4, 16);
  l.in_off = l.zero_off + 16;
  l.map_off = l.in_off + kStages * l.in_stage_halves * 2;
  l.c_off = l.map_off + rup(l.map_pixels * l.map_row * 2, 16);
  l.bytes = l.c_off + kWarps * kStageRows * l.c_row * 4;
  return l;
}

// The K table entry of 8-column group j of a 3x3 conv over cin_pad channels (k_real = 9 * cin_pad), read from a
// tile row_w pixels wide of pix halves per pixel: the offset of the group's 8 halves from a pixel's own row, -1
// past K.
YOLO12_HOST_DEVICE inline int k_group_offset(int j, int cin_pad, int k_real, int row_w, int pix) {
  const int k = j * 8;
  if (k >= k_real) return -1;
  const int tap = k / cin_pad, ci = k - tap * cin_pad;
  return ((tap / 3) * row_w + tap % 3) * pix + ci;
}

// Step 1: the map tile pixel that row r (0..15) of map m16 tile t computes (past the last pixel: the last, again).
YOLO12_HOST_DEVICE inline int map_pixel(const Layout& l, int t, int r) {
  const int q = t * 16 + r;
  return q < l.map_pixels ? q : l.map_pixels - 1;
}
// Its row in the input tile (the tap (0, 0) pixel), in halves from the stage's start.
YOLO12_HOST_DEVICE inline int map_pixel_input_row(const Layout& l, int q) {
  return ((q / kMapW) * kInW + q % kMapW) * l.in_row;
}
// Step 2: the A row of output pixel (y, x) of the tile in the map tile, in halves from the map tile's start.
YOLO12_HOST_DEVICE inline int output_map_row(const Layout& l, int y, int x) { return (y * kMapW + x) * l.map_row; }

// Map m16 tiles of warp w in step 1: t = w, w + 8, w + 16, ... below map_mtiles.
YOLO12_HOST_DEVICE inline int map_tiles_of_warp(const Layout& l, int w) {
  return w < l.map_mtiles ? (l.map_mtiles - w + kWarps - 1) / kWarps : 0;
}

// The tile walk: tile index t -> image, first output row and column.
struct Tile {
  int n = 0, oy0 = 0, ox0 = 0;
};
YOLO12_HOST_DEVICE inline int tiles_x(int wo) { return (wo + kTW - 1) / kTW; }
YOLO12_HOST_DEVICE inline int tiles_y(const Layout& l, int ho) { return (ho + l.th - 1) / l.th; }
YOLO12_HOST_DEVICE inline Tile tile_at(const Layout& l, int h, int w, int t) {
  const int tx = tiles_x(w), per_image = tx * tiles_y(l, h);
  const int n = t / per_image, r = t - n * per_image;
  return {n, (r / tx) * l.th, (r % tx) * kTW};
}

}  // namespace yolo12::cuda::halo_pair
