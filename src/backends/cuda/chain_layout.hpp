// src/backends/cuda/chain_layout.hpp - the plan and index arithmetic of conv2d_chain_f16 (conv_chain.cu): which
// shared-memory tile each map of a block lives in and for how long, the weight stages, which rows and columns a
// warp computes, and which weight rows a stage holds. Plain C++, so that the kernel and its CPU replay
// (tests/unit/test_chain_layout.cpp, which runs the kernel's schedule over one byte array) share one copy.
//
// The kernel (graph::ConvChainOp, graph/ops.hpp): a block takes BM consecutive pixels (rows of the NHWC maps; the
// links are 1x1 convs, so a pixel's outputs depend on that pixel alone, but for a depthwise link 0, which reads its
// neighbours' inputs from memory) through every link of the chain, keeping each link's output in shared memory as
// the next link's input. Its maps there are tiles of BM rows x c channels, rows
// row_halves(c) halves apart. Link i's weights (c_out x c_in of the packed (c_out, k_pad) rows) stream through
// `stages` weight stages of kChunkN output channels each, in one sequence over all links ("chunks"), stages - 1
// chunks ahead of the one being computed.
//
// Lifetimes, in link steps: link 0's input tile is read in step 0. Link i's output tile is written in step i and read
// by link i + 1 (its input) and by every later link that adds it as its residual; a stored output is copied to
// memory at the start of step i + 1 (the last link's after step L - 1). Tiles whose lifetimes overlap never share
// bytes; the others may (chain_layout places them first-fit). Where link 0 is depthwise (ChainShape::dw_k), the
// block computes link 0's output tile from memory before the first chunk, and has no input tile.
#pragma once

#include "core/host_device.hpp"

namespace yolo12::cuda::chain {

constexpr int kMaxLinks = 5;      // graph::ConvChainAttrs::kMaxLinks
constexpr int kChunkN = 64;       // output channels per weight stage
constexpr int kChannelStep = 16;  // every c_in and c_out is a multiple of it (whole k16 MMA steps, n16 pairs)
constexpr int kPadHalves = 8;     // a tile row holds c + 8 halves: 2c + 16 bytes, an odd number of 16-byte units
                                  // for c % 16 == 0, so that the 8 row addresses of an ldmatrix hit 8 distinct
                                  // bank groups
constexpr int kMinStages = 2, kMaxStages = 4;

YOLO12_HOST_DEVICE inline int row_halves(int c) { return c + kPadHalves; }
YOLO12_HOST_DEVICE inline int tile_bytes(int bm, int c) { return bm * row_halves(c) * 2; }
YOLO12_HOST_DEVICE inline int link_chunks(int c_out) { return (c_out + kChunkN - 1) / kChunkN; }

// What the plan depends on: the channels (c[0] link 0's input, c[i + 1] link i's output), the residual links, and
// whether link 0 is a depthwise dw_k x dw_k conv (then it has no input tile and no weight chunks: the block computes
// its output tile straight from memory first, and the chunks start with link 1).
struct ChainShape {
  int links = 0;
  int c[kMaxLinks + 1] = {};
  int residual_link[kMaxLinks] = {-1, -1, -1, -1, -1};
  int dw_k = 0;  // 0: link 0 is a 1x1 conv
};

// A block's shared memory (byte offsets from the dynamic shared memory's start, all multiples of 16).
struct ChainLayout {
  int bm = 0, warps = 0, stages = 0;
  int in_off = 0;                  // link 0's input: bm x row_halves(c[0]) (no bytes where link 0 is depthwise)
  int out_off[kMaxLinks] = {};     // link i's output: bm x row_halves(c[i + 1])
  int w_off = 0;                   // weight stage s at w_off + s * w_stage_bytes
  int w_stage_bytes = 0;           // kChunkN rows of row_halves(max c_in) halves
  int smem_bytes = 0;
  int first_chunk[kMaxLinks + 1] = {};  // link i's chunks are [first_chunk[i], first_chunk[i + 1])
};

// The last link step that reads link i's output tile.
YOLO12_HOST_DEVICE inline int out_last_step(const ChainShape& s, int i) {
  int last = i + 1 < s.links ? i + 1 : i;
  for (int j = i + 1; j < s.links; ++j)
    if (s.residual_link[j] == i && j > last) last = j;
  return last;
}

// The plan for tiles of bm rows on `warps` warps with `stages` weight stages; false where the shape is not one the
// kernel takes (links 2..kMaxLinks, channels multiples of kChannelStep, residual links to earlier links of the same
// channels) or the tiles do not fit in smem_limit bytes.
inline bool chain_layout(const ChainShape& s, int bm, int warps, int stages, int smem_limit, ChainLayout& l) {
  if (s.links < 2 || s.links > kMaxLinks || stages < kMinStages || stages > kMaxStages) return false;
  if (s.dw_k < 0 || (s.dw_k > 0 && (s.dw_k % 2 == 0 || s.c[0] != s.c[1] || s.residual_link[0] != -1))) return false;
  int max_cin = 0;
  for (int i = 0; i <= s.links; ++i)
    if (s.c[i] <= 0 || s.c[i] % kChannelStep != 0) return false;
  for (int i = 0; i < s.links; ++i) {
    if (i > 0 || s.dw_k == 0) max_cin = s.c[i] > max_cin ? s.c[i] : max_cin;  // the links with weight chunks
    const int r = s.residual_link[i];
    if (r >= i || r < -1 || (r >= 0 && s.c[r + 1] != s.c[i + 1])) return false;
  }
  l = ChainLayout{};
  l.bm = bm;
  l.warps = warps;
  l.stages = stages;
  // Tiles: 0 = the input, 1 + i = link i's output; lifetimes [first, last] in link steps.
  constexpr int kTiles = kMaxLinks + 1;
  int first[kTiles], last[kTiles], bytes[kTiles], off[kTiles];
  first[0] = 0;
  last[0] = 0;
  bytes[0] = s.dw_k ? 0 : tile_bytes(bm, s.c[0]);
  for (int i = 0; i < s.links; ++i) {
    first[1 + i] = i;
    last[1 + i] = out_last_step(s, i);
    bytes[1 + i] = tile_bytes(bm, s.c[i + 1]);
  }
  int top = 0;
  for (int t = 0; t <= s.links; ++t) {
    // The lowest offset (tiles are multiples of 16 bytes) clear of every placed tile alive at the same time.
    int at = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int u = 0; u < t; ++u) {
        const bool alive = first[u] <= last[t] && first[t] <= last[u];
        if (alive && at < off[u] + bytes[u] && off[u] < at + bytes[t]) {
          at = off[u] + bytes[u];
          moved = true;
        }
      }
    }
    off[t] = at;
    top = at + bytes[t] > top ? at + bytes[t] : top;
  }
  l.in_off = off[0];
  for (int i = 0; i < s.links; ++i) l.out_off[i] = off[1 + i];
  l.w_off = top;
  l.w_stage_bytes = kChunkN * row_halves(max_cin) * 2;
  l.smem_bytes = l.w_off + stages * l.w_stage_bytes;
  for (int i = 0; i < s.links; ++i)
    l.first_chunk[i + 1] = l.first_chunk[i] + (i == 0 && s.dw_k ? 0 : link_chunks(s.c[i + 1]));
  return l.smem_bytes <= smem_limit;
}

YOLO12_HOST_DEVICE inline int total_chunks(const ChainLayout& l, int links) { return l.first_chunk[links]; }
// The first link with weight chunks: 1 where link 0 is depthwise, else 0.
YOLO12_HOST_DEVICE inline int first_chunked_link(int dw_k) { return dw_k ? 1 : 0; }

// Link 0 as a depthwise conv: item q of the block's output tile of link 0 is row tile_copy(q, c).row, channels
// 8 tile_copy(q, c).col8 .. + 8; tap (ky, kx) of pixel (y, x) reads input pixel (y + ky - dw_k / 2, x + kx - dw_k / 2)
// (zero outside the map), the packed weights (dw_k * dw_k, c_pad) at row ky * dw_k + kx; fp32 sums in that tap order.
// The link of chunk t.
YOLO12_HOST_DEVICE inline int chunk_link(const ChainLayout& l, int links, int t) {
  int i = 0;
  while (i + 1 < links && t >= l.first_chunk[i + 1]) ++i;
  return i;
}

// The warps' tiles: warp w computes rows [row0, row0 + 16) and columns [col0, col0 + warp_cols) of a chunk's
// kChunkN columns. BM / 16 warps down the rows, the rest across the columns.
struct WarpTile {
  int row0, col0, warp_cols;
};
YOLO12_HOST_DEVICE inline WarpTile warp_tile(int bm, int warps, int warp) {
  const int wm = bm / 16, wn = warps / wm;
  return WarpTile{(warp % wm) * 16, (warp / wm) * (kChunkN / wn), kChunkN / wn};
}

// Where a warp's mma.sync accumulators land (mma.cuh's D layout): element e (0..3) of lane `lane` in n8 block q is row
// acc_row of the block's tile and column acc_col of the chunk (add the chunk's first channel).
YOLO12_HOST_DEVICE inline int acc_row(const WarpTile& wt, int lane, int e) { return wt.row0 + lane / 4 + 8 * (e / 2); }
YOLO12_HOST_DEVICE inline int acc_col(const WarpTile& wt, int q, int lane, int e) {
  return wt.col0 + 8 * q + 2 * (lane % 4) + e % 2;
}

// The 16-byte copies of a tile of rows x c channels (the input's load, an output's store, a weight chunk): copy q is
// row q / (c / 8), channels 8 * (q % (c / 8)) .. + 8 of it, at tile_byte(...) in shared memory.
struct TileCopy {
  int row, col8;
};
YOLO12_HOST_DEVICE inline int tile_copies(int rows, int c) { return rows * (c / 8); }
YOLO12_HOST_DEVICE inline TileCopy tile_copy(int q, int c) { return TileCopy{q / (c / 8), q % (c / 8)}; }
YOLO12_HOST_DEVICE inline int tile_byte(int off, int c, int row, int col8) { return off + row * row_halves(c) * 2 + 16 * col8; }
// The copies q = first, first + step, ... of a tile of c channels, as tile_copy gives them, by stepping (row, col8)
// instead of dividing by c / 8 per copy (the kernel's threads: first = threadIdx.x, step = blockDim.x):
//   for (CopyCursor k(first, step, c); k.row < rows; k.next()) ...
struct CopyCursor {
  int row, col8, per_row, row_step, col_step;
  YOLO12_HOST_DEVICE CopyCursor(int first, int step, int c)
      : row(first / (c / 8)), col8(first % (c / 8)), per_row(c / 8), row_step(step / (c / 8)), col_step(step % (c / 8)) {}
  YOLO12_HOST_DEVICE void next() {
    row += row_step;
    col8 += col_step;
    if (col8 >= per_row) {
      col8 -= per_row;
      ++row;
    }
  }
};
// A weight chunk: link i's chunk j is the stage tile of its output channels [j kChunkN, j kChunkN + chunk_rows) (rows)
// x c_in (K columns), from the packed rows j kChunkN + row.
YOLO12_HOST_DEVICE inline int chunk_rows(int c_out, int j) {
  return c_out - j * kChunkN < kChunkN ? c_out - j * kChunkN : kChunkN;
}
YOLO12_HOST_DEVICE inline int stage_offset(const ChainLayout& l, int t) { return l.w_off + (t % l.stages) * l.w_stage_bytes; }

}  // namespace yolo12::cuda::chain
