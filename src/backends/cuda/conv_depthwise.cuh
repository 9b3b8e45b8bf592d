// src/backends/cuda/conv_depthwise.cuh - the parameters of the depthwise kernels (conv_depthwise.cu) and the
// pieces of dwconv_tiled_f16 and dwconv_rows_f16 that run the same on the host: the block's tile loads (given a
// 16-byte copy) and one thread's outputs. The kernels run them with cp.async around one barrier; the [dwtiled]
// and [dwrows] tests in tests/gpu/test_conv.cu replay them on the CPU.
//
// dwconv_tiled_f16: one block of 256 threads per tile of 8 x 16 output pixels x 16 channels (two 8-channel
// chunks; the second is empty where c / 8 is odd).
//   xs (kInH, kInW, 16) halves: the input tile, kInH = 7 S + K rows, kInW = 15 S + K columns from
//                               (oy0 S - pad, ox0 S - pad), zero outside the image and past c;
//   ws (K * K, 16) halves:      the packed weights of the 16 channels.
// Thread t computes channels [8 (t % 2), +8) of the block's channel pair at output pixel t / 2 of the tile
// (row t / 32, column (t / 2) % 16).
//
// dwconv_rows_f16 (stride 1): one block of 32 CH threads (CH = 1, 2 or 4 warps) per tile of 8 x 20 output
// pixels x 8 CH channels; warp w owns chunk w (channels [c0 + 8 w, +8)) of the tile.
//   xs (CH, kInH, kDwRowsStride, 8) halves: per chunk the input tile, kInH = 7 + K rows, kInW = 19 + K
//                                           columns from (oy0 - pad, ox0 - pad), zero outside the image and
//                                           past c; chunk regions kChunkStride vectors apart;
//   ws (CH, K * K, 8) floats:                the chunks' weights, converted to fp32 once per block.
// Lane l of warp w computes 5 adjacent outputs (row l / 4, columns 5 (l % 4) .. + 4 of the tile) x 8 channels.
// Per kernel row it converts each of its 5 + K - 1 input vectors once and uses it for every output whose
// window covers it, with the row's K weight vectors in registers (loads of one address per warp: broadcasts).
// Shared-memory banks: a quarter-warp (8 lanes: two tile rows x four column groups) reads vectors 28 r + 5 g
// + j, distinct modulo 8 for r in {0, 1}, g in 0..3, so the 16-byte loads are conflict-free; the tile copy
// writes (pixel, chunk) pairs chunk fastest, which kChunkStride (2 or 4 modulo 8) spreads over the banks.
#pragma once

#include <cstdint>

#include "conv_detail.cuh"

namespace yolo12::cuda::conv_detail {

template <typename T>
struct DwParams : ConvParams<T> {  // the launch (w: (k*k, c_pad) packed, c = c_in = c_out), plus:
  int c_pad = 0;                   // c_out rounded up to kChunk: the packed weights' row length
};

template <typename T>
DwParams<T> make_dw_params(const ConvParams<T>& p) {
  DwParams<T> a;
  static_cast<ConvParams<T>&>(a) = p;
  a.c_pad = round_up(p.c_out, kChunk);
  return a;
}

constexpr int kDwTileH = 8, kDwTileW = 16;  // output pixels per tile
constexpr int kDwTileChunks = 2;             // 8-channel chunks per tile: 32 bytes of each pixel
constexpr int kDwTiledThreads = kDwTileH * kDwTileW * kDwTileChunks;

template <int K, int S>
struct DwTile {
  static constexpr int kInH = (kDwTileH - 1) * S + K, kInW = (kDwTileW - 1) * S + K;
  static constexpr int kXHalves = kInH * kInW * kDwTileChunks * 8;
  static constexpr int kWHalves = K * K * kDwTileChunks * 8;
};

// Grid: x = tile column * channel pairs + pair (neighbouring blocks share the input's cache lines),
// y = tile row, z = image.
struct DwTileCoords {
  int n, oy0, ox0, c0;  // image, first output row and column, first channel
};
__host__ __device__ inline int dw_channel_pairs(int c) { return (c / 8 + kDwTileChunks - 1) / kDwTileChunks; }
__host__ __device__ inline DwTileCoords dw_tile_coords(const DwParams<__half>& a, int bx, int by, int bz) {
  const int pairs = dw_channel_pairs(a.c_out);
  return {bz, by * kDwTileH, (bx / pairs) * kDwTileW, (bx % pairs) * kDwTileChunks * 8};
}

// Thread tid's part of the block's loads: copy(dst, src) copies 16 bytes, or writes zeros for a null src.
#pragma nv_exec_check_disable
template <int K, int S, typename Copy16>
__host__ __device__ void dw_tiled_load(const DwParams<__half>& a, const DwTileCoords& at, int tid, __half* xs, __half* ws,
                                       const Copy16& copy) {
  using Tile = DwTile<K, S>;
  const int iy0 = at.oy0 * S - a.pad, ix0 = at.ox0 * S - a.pad;
  const __half* ximg = a.x + static_cast<long long>(at.n) * a.h * a.w_in * a.ldx;  // (H, W, ldx)
  for (int i = tid; i < Tile::kInH * Tile::kInW * kDwTileChunks; i += kDwTiledThreads) {
    const int sub = i % kDwTileChunks, pix = i / kDwTileChunks;
    const int iy = iy0 + pix / Tile::kInW, ix = ix0 + pix % Tile::kInW, ch = at.c0 + sub * 8;
    const bool ok = iy >= 0 && iy < a.h && ix >= 0 && ix < a.w_in && ch < a.c_out;
    copy(xs + i * 8, ok ? ximg + (static_cast<long long>(iy) * a.w_in + ix) * a.ldx + ch : nullptr);
  }
  for (int i = tid; i < K * K * kDwTileChunks; i += kDwTiledThreads) {
    const int sub = i % kDwTileChunks, tap = i / kDwTileChunks, ch = at.c0 + sub * 8;
    copy(ws + i * 8, ch < a.c_out ? a.w + tap * a.c_pad + ch : nullptr);
  }
}

// Output pixel pix (of the whole (B, Ho, Wo) grid), channels [ch, ch + 8) from their conv sums: the fused
// epilogue, the residual, one rounding to half, one 16-byte store (as dwconv_direct).
__host__ __device__ inline void dw_store8(const DwParams<__half>& a, long long pix, int ch, const float (&acc)[8]) {
  float out[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = epilogue<__half>(acc[e], a.bias, a.gamma, a.silu(), ch + e);
  if (a.residual) {
    float r[8];
    unpack8(load_nc(reinterpret_cast<const uint4*>(a.residual + pix * a.ldr + ch)), r);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] += r[e];
  }
  *reinterpret_cast<uint4*>(a.y + pix * a.ldy + ch) = pack8(out);
}

// Thread tid's output pixel from the loaded tile: taps in row-major order (as dwconv_direct), the fused
// epilogue, the residual, one 16-byte store. Threads past the image or c do nothing.
template <int K, int S>
__host__ __device__ void dw_tiled_pixel(const DwParams<__half>& a, const DwTileCoords& at, int tid, const __half* xs,
                                        const __half* ws) {
  using Tile = DwTile<K, S>;
  const int sub = tid % kDwTileChunks, p = tid / kDwTileChunks;
  const int py = p / kDwTileW, px = p % kDwTileW;
  const int oy = at.oy0 + py, ox = at.ox0 + px, ch = at.c0 + sub * 8;
  if (oy >= a.ho || ox >= a.wo || ch >= a.c_out) return;
  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int ky = 0; ky < K; ++ky)
#pragma unroll
    for (int kx = 0; kx < K; ++kx) {
      float xv[8], wv[8];
      unpack8(*reinterpret_cast<const uint4*>(xs + (((py * S + ky) * Tile::kInW + px * S + kx) * kDwTileChunks + sub) * 8),
              xv);
      unpack8(*reinterpret_cast<const uint4*>(ws + ((ky * K + kx) * kDwTileChunks + sub) * 8), wv);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(xv[e], wv[e], acc[e]);
    }
  dw_store8(a, (static_cast<long long>(at.n) * a.ho + oy) * a.wo + ox, ch, acc);
}

// ---- dwconv_rows_f16 ----
constexpr int kDwRowsOutX = 5;                                // adjacent outputs per thread
constexpr int kDwRowsLanesX = 4;                              // threads per tile row
constexpr int kDwRowsTileW = kDwRowsOutX * kDwRowsLanesX;     // 20 output columns: 20, 40, 80, 160 without padding
constexpr int kDwRowsTileH = 32 / kDwRowsLanesX;              // 8 output rows: one warp per chunk
constexpr int kDwRowsStride = 28;                             // vectors per input-tile row in shared memory

template <int K, int CH>
struct DwRowsTile {
  static constexpr int kInH = kDwRowsTileH + K - 1, kInW = kDwRowsTileW + K - 1;
  static constexpr int kThreads = 32 * CH;
  // Vectors between two chunks' tiles: kInH rows, plus 2 (CH 4) or 4 (CH 2) so that the copy's writes of
  // one pixel's CH chunks fall into different banks.
  static constexpr int kChunkStride = kInH * kDwRowsStride + (8 / CH) % 8;
  static constexpr int kXHalves = CH * kChunkStride * 8;
  static constexpr int kWFloats = CH * K * K * 8;
  static_assert(kInW <= kDwRowsStride && kDwRowsStride % 8 == 4, "rows of 4 mod 8 vectors: conflict-free reads");
  static_assert(CH == 1 || CH == 2 || CH == 4, "one, two or four warps");
};

// Grid: x = tile column * channel groups + group, y = tile row, z = image (as dwconv_tiled_f16).
__host__ __device__ inline int dw_rows_groups(int c, int chunks_per_block) {
  return (c / 8 + chunks_per_block - 1) / chunks_per_block;
}
__host__ __device__ inline DwTileCoords dw_rows_coords(const DwParams<__half>& a, int chunks_per_block, int bx, int by,
                                                       int bz) {
  const int groups = dw_rows_groups(a.c_out, chunks_per_block);
  return {bz, by * kDwRowsTileH, (bx / groups) * kDwRowsTileW, (bx % groups) * chunks_per_block * 8};
}

// Thread tid's part of the block's loads: the input tile through copy (16 bytes, or zeros for a null src),
// chunk fastest so that one pixel's CH chunks are contiguous in memory; the weights converted to fp32.
#pragma nv_exec_check_disable
template <int K, int CH, typename Copy16>
__host__ __device__ void dw_rows_load(const DwParams<__half>& a, const DwTileCoords& at, int tid, __half* xs, float* ws,
                                      const Copy16& copy) {
  using Tile = DwRowsTile<K, CH>;
  const int iy0 = at.oy0 - a.pad, ix0 = at.ox0 - a.pad;
  const __half* ximg = a.x + static_cast<long long>(at.n) * a.h * a.w_in * a.ldx;  // (H, W, ldx)
  for (int i = tid; i < Tile::kInH * Tile::kInW * CH; i += Tile::kThreads) {
    const int sub = i % CH, pix = i / CH, row = pix / Tile::kInW, col = pix % Tile::kInW;
    const int iy = iy0 + row, ix = ix0 + col, ch = at.c0 + sub * 8;
    const bool ok = iy >= 0 && iy < a.h && ix >= 0 && ix < a.w_in && ch < a.c_out;
    copy(xs + (sub * Tile::kChunkStride + row * kDwRowsStride + col) * 8,
         ok ? ximg + (static_cast<long long>(iy) * a.w_in + ix) * a.ldx + ch : nullptr);
  }
  for (int i = tid; i < K * K * CH; i += Tile::kThreads) {
    const int sub = i % CH, tap = i / CH, ch = at.c0 + sub * 8;
    float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    if (ch < a.c_out) unpack8(load_nc(reinterpret_cast<const uint4*>(a.w + tap * a.c_pad + ch)), v);
    float4* dst = reinterpret_cast<float4*>(ws + (sub * K * K + tap) * 8);
    dst[0] = make_float4(v[0], v[1], v[2], v[3]);
    dst[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

// 8 floats from 16-byte aligned (shared) memory: two 16-byte loads.
__host__ __device__ inline void load8(const float* p, float (&v)[8]) {
  const float4 lo = reinterpret_cast<const float4*>(p)[0], hi = reinterpret_cast<const float4*>(p)[1];
  v[0] = lo.x;
  v[1] = lo.y;
  v[2] = lo.z;
  v[3] = lo.w;
  v[4] = hi.x;
  v[5] = hi.y;
  v[6] = hi.z;
  v[7] = hi.w;
}

// Thread tid's 5 outputs x 8 channels from the loaded tile. For each output the taps run ky-major, then kx,
// one fmaf each into an fp32 sum from 0 (the order of dwconv_direct and dwconv_tiled_f16; the zero-filled
// taps outside the image add +-0, which leaves every sum's bits as they are, so the results are
// bit-identical); then dw_store8. Threads past the image or c do nothing.
template <int K, int CH>
__host__ __device__ void dw_rows_outputs(const DwParams<__half>& a, const DwTileCoords& at, int tid, const __half* xs,
                                         const float* ws) {
  using Tile = DwRowsTile<K, CH>;
  constexpr int kSpan = kDwRowsOutX + K - 1;  // input vectors of one kernel row
  const int sub = tid / 32, lane = tid % 32;
  const int ty = lane / kDwRowsLanesX, tx = (lane % kDwRowsLanesX) * kDwRowsOutX;
  const int oy = at.oy0 + ty, ox0 = at.ox0 + tx, ch = at.c0 + sub * 8;
  if (oy >= a.ho || ox0 >= a.wo || ch >= a.c_out) return;
  const __half* xt = xs + (sub * Tile::kChunkStride + ty * kDwRowsStride + tx) * 8;  // (kInH - ty, 28) from the first tap
  const float* wt = ws + sub * K * K * 8;                                              // (K * K, 8)
  float acc[kDwRowsOutX][8];
#pragma unroll
  for (int o = 0; o < kDwRowsOutX; ++o)
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[o][e] = 0.f;
#pragma unroll 1
  for (int ky = 0; ky < K; ++ky) {
    float wr[K][8];  // this kernel row's taps
#pragma unroll
    for (int kx = 0; kx < K; ++kx) load8(wt + (ky * K + kx) * 8, wr[kx]);
#pragma unroll
    for (int j = 0; j < kSpan; ++j) {
      float xv[8];
      unpack8(*reinterpret_cast<const uint4*>(xt + (ky * kDwRowsStride + j) * 8), xv);
#pragma unroll
      for (int o = 0; o < kDwRowsOutX; ++o) {
        const int kx = j - o;  // compile-time after unrolling
        if (kx >= 0 && kx < K) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o][e] = fmaf(xv[e], wr[kx][e], acc[o][e]);
        }
      }
    }
  }
  const long long pix0 = (static_cast<long long>(at.n) * a.ho + oy) * a.wo + ox0;
#pragma unroll
  for (int o = 0; o < kDwRowsOutX; ++o) {
    if (ox0 + o >= a.wo) break;
    dw_store8(a, pix0 + o, ch, acc[o]);
  }
}

}  // namespace yolo12::cuda::conv_detail
