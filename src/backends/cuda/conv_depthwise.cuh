// src/backends/cuda/conv_depthwise.cuh - the parameters of the depthwise kernels (conv_depthwise.cu) and the
// pieces of dwconv_tiled_f16 that run the same on the host: the block's tile loads (given a 16-byte copy) and
// one thread's pixel. The kernel runs them with cp.async around one barrier; the [dwtiled] tests in
// tests/gpu/test_conv.cu replay them on the CPU.
//
// dwconv_tiled_f16: one block of 256 threads per tile of 8 x 16 output pixels x 16 channels (two 8-channel
// chunks; the second is empty where c / 8 is odd).
//   xs (kInH, kInW, 16) halves: the input tile, kInH = 7 S + K rows, kInW = 15 S + K columns from
//                               (oy0 S - pad, ox0 S - pad), zero outside the image and past c;
//   ws (K * K, 16) halves:      the packed weights of the 16 channels.
// Thread t computes channels [8 (t % 2), +8) of the block's channel pair at output pixel t / 2 of the tile
// (row t / 32, column (t / 2) % 16).
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

}  // namespace yolo12::cuda::conv_detail
