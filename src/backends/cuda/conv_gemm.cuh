// src/backends/cuda/conv_gemm.cuh - what the implicit-GEMM conv kernels share (conv_implicit_gemm.cu,
// conv_wgmma.cu, conv_narrow.cu): the kernel parameters computed on the host once per launch, where an
// output row reads its input, and the staged epilogue's 8-channel store.
//
// The GEMM of a conv (per group g): Y[m, n] = sum_k A[m, k] * B[n, k] with
//   m = (b, oy, ox) the output pixel (M = B * Ho * Wo rows, row-major like the NHWC output),
//   n the output channel within the group (N = n_g),
//   k = tap * cin_pad + ci, tap = ky * k + kx (see conv_detail.cuh for the packed weights),
//   A[m, k] = x[b, oy*s - p + ky*d, ox*s - p + kx*d, g*cin_g + ci] (zero outside the image or ci >= cin_g).
#pragma once

#include <cstdint>

#include "conv_detail.cuh"

namespace yolo12::cuda::conv_detail {

// Everything a kernel needs: the launch (ConvParams: the op's attributes, sizes and views; w = the
// (groups, n_g, k_pad) packed weights) and what is derived from it on the host once per launch.
template <typename T>
struct ImplicitGemmParams : ConvParams<T> {
  int m = 0;           // B * Ho * Wo
  int n_g = 0, cin_g = 0, cin_pad = 0, k_real = 0, k_pad = 0;
  bool pair_out = false;  // the epilogue may store channel pairs (2-element aligned y / residual)
  bool vec_out = false;   // 16-byte stores of 16 bytes of channels (n_g, ldy, ldr multiples of 16 bytes, aligned)
  bool vec_a = false;     // 16-byte A loads: cin_g and ldx multiples of 16 bytes, x 16-byte aligned
  int smem_stages = 0;    // conv2d_implicit_gemm_f16: the A / B pipeline stages its shared memory holds
                          // (set by its launcher: at most STAGES, fewer for a short K loop)
  int ktab_offset = 0;    // conv2d_implicit_gemm_f16, k x k with vec_a: byte offset of its K-column table
                          // in dynamic shared memory (set by its launcher)
  int n_tiles = 0;        // the non-persistent GEMM kernels' block order (gemm_grid / gemm_tile below): > 0, the
                          // grid's x enumerates (row tile, column tile, split rank) over n_tiles column
                          // tiles, the column tile fastest but for the rank; 0, x = (row tile, rank), y =
                          // column tile
};

template <typename T>
ImplicitGemmParams<T> make_params(const ConvParams<T>& p) {
  const GemmLayout l = gemm_layout(p);
  ImplicitGemmParams<T> a;
  static_cast<ConvParams<T>&>(a) = p;
  a.m = p.batch * p.ho * p.wo;
  a.n_g = l.n_g;
  a.cin_g = l.cin_g;
  a.cin_pad = l.cin_pad;
  a.k_real = l.k_real;
  a.k_pad = l.k_pad;
  const auto aligned = [](const void* ptr, int bytes) { return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0; };
  const int per16 = 16 / static_cast<int>(sizeof(T));
  a.vec_out = l.n_g % per16 == 0 && p.ldy % per16 == 0 && aligned(p.y, 16) &&
              (!p.residual || (p.ldr % per16 == 0 && aligned(p.residual, 16)));
  a.pair_out = l.n_g % 2 == 0 && p.ldy % 2 == 0 && aligned(p.y, 2 * sizeof(T)) &&
               (!p.residual || (p.ldr % 2 == 0 && aligned(p.residual, 2 * sizeof(T))));
  a.vec_a = l.cin_g % per16 == 0 && p.ldx % per16 == 0 && aligned(p.x, 16);
  return a;
}

// Whether the K-column table of a k x k conv (conv2d_implicit_gemm_f16, conv2d_implicit_gemm_wgmma) holds a's
// tap offsets: element offsets from a row's top-left tap within an int, row and column offsets within 15 bits.
// Where not (no yolo12 layer comes near), the kernels gather k x k A chunks without the table.
template <typename T>
bool ktable_fits(const ImplicitGemmParams<T>& a) {
  const long long reach = a.k > 1 ? (a.k - 1LL) * a.dilation : 0;
  return ((reach * a.w_in + reach) * a.ldx + a.cin_pad) <= 0x7fffffffLL && reach < (1 << 15);
}

// The grid of a non-persistent GEMM kernel (conv2d_implicit_gemm_f16, conv2d_implicit_gemm_wgmma) over bm x bn
// output tiles with `split` K ranks per tile (a cluster of consecutive x) and one z slice per group; sets
// a.n_tiles for gemm_tile.
//   column_fastest (variant raster_n, twelfth session): x = (row tile * column tiles + column tile) * split +
//     rank. The blocks resident at one time then cover all column tiles of a few row tiles, so each A tile
//     (bm rows x K) comes from DRAM once and its other column tiles read it from L2.
//   otherwise: x = row tile * split + rank, y = column tile, the order before: the hardware issues x fastest,
//     so each column tile made its own pass over all of A, from DRAM again wherever A is larger than L2
//     (yolo12x at batch 32: 1x1 768->768 at 80x80 reads its 315 MB input six times in 128-column tiles).
template <typename T>
dim3 gemm_grid(ImplicitGemmParams<T>& a, int bm, int bn, int split, int groups, bool column_fastest) {
  const int row_tiles = ceil_div(a.m, bm), col_tiles = ceil_div(a.n_g, bn);
  if (column_fastest) {
    a.n_tiles = col_tiles;
    return dim3(static_cast<unsigned>(static_cast<long long>(row_tiles) * col_tiles * split), 1u,
                static_cast<unsigned>(groups));
  }
  a.n_tiles = 0;
  return dim3(static_cast<unsigned>(row_tiles * split), static_cast<unsigned>(col_tiles), static_cast<unsigned>(groups));
}

#ifdef __CUDACC__
// This block's output tile in the grid of gemm_grid: its first row m0 and column n0, and its split-K rank.
struct GemmTile {
  int m0, n0, rank;
};
template <int BM, int BN, int SPLIT>
__device__ __forceinline__ GemmTile gemm_tile(int n_tiles) {
  const int t = static_cast<int>(blockIdx.x) / SPLIT;
  GemmTile r;
  r.rank = static_cast<int>(blockIdx.x) % SPLIT;
  if (n_tiles > 0) {
    const int mt = t / n_tiles;
    r.m0 = mt * BM;
    r.n0 = (t - mt * n_tiles) * BN;
  } else {
    r.m0 = t * BM;
    r.n0 = static_cast<int>(blockIdx.y) * BN;
  }
  return r;
}

// Where output row m reads its input: the image's base pointer (group offset included) and the top-left
// tap's coordinates. Rows past M get coordinates that fail every bounds check.
template <typename T>
struct RowOrigin {
  const T* base;  // (H, W, ldx) image of row m, at channel g * cin_g
  int iy0, ix0;
};

template <typename T>
__host__ __device__ __forceinline__ RowOrigin<T> row_origin(const ImplicitGemmParams<T>& a, int m, int g) {
  RowOrigin<T> r;
  if (m >= a.m) {
    r.base = a.x;
    r.iy0 = r.ix0 = -(1 << 28);
    return r;
  }
  const int hw = a.ho * a.wo;
  const int b = m / hw;
  const int rem = m - b * hw;
  const int oy = rem / a.wo;
  const int ox = rem - oy * a.wo;
  r.base = a.x + static_cast<long long>(b) * a.h * a.w_in * a.ldx + g * a.cin_g;
  r.iy0 = oy * a.stride - a.pad;
  r.ix0 = ox * a.stride - a.pad;
  return r;
}

// The input element offset of (row origin, K index kk) or -1 when it reads zero (outside the image,
// or kk in the padding). cin_pad is a multiple of 8, so an aligned 8-chunk shares one tap.
template <typename T>
__host__ __device__ __forceinline__ long long a_offset(const ImplicitGemmParams<T>& a, const RowOrigin<T>& r, int kk) {
  if (kk >= a.k_real) return -1;
  const int tap = kk / a.cin_pad;
  const int ci = kk - tap * a.cin_pad;
  const int ky = tap / a.k;
  const int kx = tap - ky * a.k;
  const int iy = r.iy0 + ky * a.dilation;
  const int ix = r.ix0 + kx * a.dilation;
  if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.w_in) return -1;
  return (static_cast<long long>(iy) * a.w_in + ix) * a.ldx + ci;
}

// Row m's origin as the fp16 GEMM kernels keep it (computed once per thread and row). kPointwise: x's
// row m itself (iy0 0; -1 past M, which every load then skips). kTable (k x k with the K-column table):
// the base points at the row's top-left tap (iy0, ix0), which may lie outside the image; it is only read
// at base + a tap's offset that table_chunk's bounds check lets through. Otherwise row_origin's.
template <bool kPointwise, bool kTable>
__device__ __forceinline__ RowOrigin<__half> gemm_row_origin(const ImplicitGemmParams<__half>& a, int m, int g) {
  RowOrigin<__half> r;
  if constexpr (kPointwise) {
    r.base = a.x + static_cast<long long>(m < a.m ? m : 0) * a.ldx + g * a.cin_g;
    r.iy0 = m < a.m ? 0 : -1;
  } else {
    r = row_origin(a, m, g);
    if (kTable && m < a.m) r.base += (static_cast<long long>(r.iy0) * a.w_in + r.ix0) * a.ldx;
  }
  return r;
}

// Whether the 16-byte A chunk at K column kk of row r is read through its K-column table entry `tap`
// (gemm_row_origin<false, true>; it then starts at r.base + tap.x): false past k_real or where the tap falls
// outside the image. tap_dy, tap_dx: the entry's row and column offsets (tap.y >> 16, tap.y & 0xffff).
__device__ __forceinline__ bool table_chunk_read(const ImplicitGemmParams<__half>& a, const RowOrigin<__half>& r,
                                                 int tap_dy, int tap_dx, int kk) {
  const int iy = r.iy0 + tap_dy, ix = r.ix0 + tap_dx;
  return kk < a.k_real && static_cast<unsigned>(iy) < static_cast<unsigned>(a.h) &&
         static_cast<unsigned>(ix) < static_cast<unsigned>(a.w_in);
}

// The K-column table of a k x k conv, filled by the block's threads (thread tid of `threads`), entries
// [0, entries): entry q describes K columns [8q, 8q + 8), one tap's channels ci..ci+7: x = its element offset
// from the row's top-left tap, (dy * w_in + dx) * ldx + ci; y = dy << 16 | dx, the tap's offset in rows and
// columns (zero past k_real). Built once per block, it replaces the two divisions per 16-byte chunk and K tile
// that decomposing K into (tap, ci) took: the A loads had issued several times as many instructions as the
// MMAs. The launchers check ktable_fits. The caller synchronises the block before reading it.
template <typename T>
__device__ __forceinline__ void fill_ktable(const ImplicitGemmParams<T>& a, int2* ktab, int entries, int tid, int threads) {
  for (int q = tid; q < entries; q += threads) {
    const int kk = q * kChunk;
    int2 e = make_int2(0, 0);
    if (kk < a.k_real) {
      const int tap = kk / a.cin_pad, ci = kk - tap * a.cin_pad;
      const int ky = tap / a.k, kx = tap - ky * a.k;
      const int dy = ky * a.dilation, dx = kx * a.dilation;
      e = make_int2((dy * a.w_in + dx) * a.ldx + ci, dy << 16 | dx);
    }
    ktab[q] = e;
  }
}

// 8 staged fp32 values at src (16-byte aligned) into v: two 16-byte shared-memory loads.
__device__ __forceinline__ void load_staged8(const float* src, float (&v)[8]) {
  const float4 lo = *reinterpret_cast<const float4*>(src);
  const float4 hi = *reinterpret_cast<const float4*>(src + 4);
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
// The 16-byte path of store_chunk8 with row m's residual chunk at channel c already loaded (res; read only where
// the conv has a residual): adds it, rounds once to half, one 16-byte store.
__device__ __forceinline__ void store_chunk8_vec(const ImplicitGemmParams<__half>& a, int m, long long c, float (&v)[8],
                                                 const uint4& res) {
  if (a.residual) {
    const __half2* r2 = reinterpret_cast<const __half2*>(&res);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = __half22float2(r2[e]);
      v[2 * e] += f.x;
      v[2 * e + 1] += f.y;
    }
  }
  uint4 out;
  __half2* o2 = reinterpret_cast<__half2*>(&out);
#pragma unroll
  for (int e = 0; e < 4; ++e) o2[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
  *reinterpret_cast<uint4*>(a.y + static_cast<long long>(m) * a.ldy + c) = out;
}
// Whether store_chunk8 takes the 16-byte path for the chunk at group channel n.
__device__ __forceinline__ bool chunk8_vec(const ImplicitGemmParams<__half>& a, int n) {
  return a.vec_out && n + 8 <= a.n_g;
}
// Row m's residual chunk at channel c for store_chunk8_vec (zeros where the conv has none).
__device__ __forceinline__ uint4 residual_chunk8(const ImplicitGemmParams<__half>& a, int m, long long c) {
  return a.residual ? __ldg(reinterpret_cast<const uint4*>(a.residual + static_cast<long long>(m) * a.ldr + c))
                    : make_uint4(0u, 0u, 0u, 0u);
}

// Output row m, channels [n, n + 8) of group channel n (c = g * n_g + n, its first channel), v their
// values with the epilogue applied (conv_detail.cuh): adds the residual and rounds once to half; 16-byte
// loads and stores where vec_out allows, else element by element up to n_g. The staged epilogue of
// the fp16 GEMM kernels (conv_implicit_gemm.cu, conv_wgmma.cu) writes every output chunk through it.
__device__ __forceinline__ void store_chunk8(const ImplicitGemmParams<__half>& a, int m, long long c, int n,
                                             float (&v)[8]) {
  if (chunk8_vec(a, n)) {
    store_chunk8_vec(a, m, c, v, residual_chunk8(a, m, c));
  } else {
    __half* yp = a.y + static_cast<long long>(m) * a.ldy + c;
    const __half* rp = a.residual ? a.residual + static_cast<long long>(m) * a.ldr + c : nullptr;
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (n + e < a.n_g) yp[e] = __float2half_rn(v[e] + (rp ? __half2float(rp[e]) : 0.f));
  }
}

// Output row m, group channels [n, n + 8) of group g from 8 staged fp32 sums at src (16-byte aligned): the
// epilogue (conv_detail.cuh), then store_chunk8 (residual, one rounding, 16-byte stores). The wgmma kernels'
// staged epilogue (conv_wgmma.cu, conv_halo_wgmma.cu).
__device__ __forceinline__ void store_staged8(const ImplicitGemmParams<__half>& a, const float* src, int m, int n,
                                              int g) {
  const long long c = static_cast<long long>(g) * a.n_g + n;
  float v[8];
  load_staged8(src, v);
  if (n + 8 <= a.n_g) {  // one SiLU test per chunk: its eight values' SiLUs overlap
    with_silu(a.silu(), [&](auto silu) { epilogue8_with<decltype(silu)::value>(v, a.bias, a.gamma, c); });
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (n + e < a.n_g) v[e] = epilogue<__half>(v[e], a.bias, a.gamma, a.silu(), static_cast<int>(c) + e);
  }
  store_chunk8(a, m, c, n, v);
}
// The block store loop of a staged tile with its residual read ahead (the two-warpgroup wgmma kernel): chunk i of
// [0, total) goes to thread i % threads, at most kIters per thread; where(i, m, n, src) gives its output row m,
// group channel n and staged floats src (16-byte aligned), false for a chunk outside the output. The
// residual chunks of two of the thread's chunks at a time are loaded first, so that their latencies overlap (the
// loop before waited for each chunk's residual before the next). kEpilogue: the staged values are raw sums and get
// the epilogue here (store_staged8's, the SiLU test per chunk); else they are finished. Then the residual, one
// rounding, a 16-byte store (store_chunk8_vec; store_staged8 / store_chunk8 for the chunks it cannot take). The same
// results as store_staged8 / store_chunk8 chunk by chunk, bit for bit.
template <int kIters, bool kEpilogue, typename Where>
__device__ __forceinline__ void store_staged_tile(const ImplicitGemmParams<__half>& a, int g, int tid, int threads,
                                                  int total, Where&& where) {
  constexpr int kAhead = kIters < 2 ? kIters : 2;  // chunks whose residual is in flight at once (registers: 4 each)
  const long long c0 = static_cast<long long>(g) * a.n_g;
#pragma unroll 1  // a rolled loop: unrolled, the chunk code (twice: both store paths) took kIters copies
  for (int it0 = 0; it0 < kIters; it0 += kAhead) {
    uint4 res[kAhead];
#pragma unroll
    for (int k = 0; k < kAhead; ++k) {
      const int i = tid + (it0 + k) * threads;
      int m = 0, n = 0;
      const float* src = nullptr;
      res[k] = a.residual && it0 + k < kIters && i < total && where(i, m, n, src) && chunk8_vec(a, n)
                   ? residual_chunk8(a, m, c0 + n)
                   : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int k = 0; k < kAhead; ++k) {
      const int i = tid + (it0 + k) * threads;
      int m = 0, n = 0;
      const float* src = nullptr;
      if (it0 + k >= kIters || i >= total || !where(i, m, n, src)) continue;
      if (!chunk8_vec(a, n)) {  // partial chunks and unaligned views: element by element
        if constexpr (kEpilogue) {
          store_staged8(a, src, m, n, g);
        } else {
          float v[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) v[e] = src[e];
          store_chunk8(a, m, c0 + n, n, v);
        }
        continue;
      }
      float v[8];
      load_staged8(src, v);
      if constexpr (kEpilogue)
        with_silu(a.silu(), [&](auto silu) { epilogue8_with<decltype(silu)::value>(v, a.bias, a.gamma, c0 + n); });
      store_chunk8_vec(a, m, c0 + n, v, res[k]);
    }
  }
}

// The warp epilogue of the persistent wgmma kernels (conv2d_implicit_gemm_wgmma_ws, conv2d_gemm_tma): one warp's
// 16 output rows [rw, rw + 16) x columns [n0, n0 + BN) of group g from its accumulators (the wgmma layout,
// wgmma.cuh), 32 columns at a time through the warp's private slice epi (16, kWgEpiRow) floats, then
// store_staged8 per 8-channel chunk. No block barrier: each warp finishes its rows on its own.
// kInRegs (conv2d_gemm_tma): bias, SiLU and gamma are applied to the accumulators first, each column pair's bias
// and gamma loaded once for its two rows, the SiLU flag tested once per 32 columns (epilogue_with, with_silu: the
// same arithmetic as epilogue()), and the store loop only adds the residual, rounds and stores (store_chunk8):
// about a quarter of the loads, and straight-line code over the accumulators. The results are the same bit for bit.
// Otherwise store_staged8 applies the epilogue per chunk (one SiLU test per chunk).
// kPrefetch (kInRegs, for callers with registers to spare): each slice's residual chunks are loaded before its
// arithmetic, so that the SiLUs run while they arrive, instead of one load's latency per stored chunk.
constexpr int kWgEpiCols = 32;                  // columns a warp stages at a time
constexpr int kWgEpiRow = kWgEpiCols + 8;       // floats (a half-warp's float2 writes hit distinct banks)
constexpr int kWgEpiWarp = 16 * kWgEpiRow * 4;  // bytes of one warp's slice
template <int BN, bool kInRegs = false, bool kPrefetch = false>
__device__ __forceinline__ void wgmma_warp_epilogue(const ImplicitGemmParams<__half>& a, float (&acc)[BN / 2],
                                                    float* epi, int rw, int n0, int g, int lane) {
  static_assert(BN % kWgEpiCols == 0, "whole epilogue slices");
  static_assert(kInRegs || !kPrefetch, "the residual is read ahead only on the register path");
  const long long c0 = static_cast<long long>(g) * a.n_g;  // the group's first output channel
  constexpr int kPasses = 16 * (kWgEpiCols / 8) / 32;  // 8-channel chunks a lane stores per slice
#pragma unroll
  for (int cc = 0; cc < BN / kWgEpiCols; ++cc) {
    // Chunk h of this lane in the slice: staged row chunk_row(h), group channel chunk_n(h).
    const auto chunk_row = [&](int h) { return (lane + 32 * h) / (kWgEpiCols / 8); };
    const auto chunk_n = [&](int h) { return n0 + cc * kWgEpiCols + (lane + 32 * h) % (kWgEpiCols / 8) * 8; };
    uint4 res[kPasses];  // kPrefetch: the residual chunks, loaded before the arithmetic so that it covers their latency
    if constexpr (kPrefetch) {
#pragma unroll
      for (int h = 0; h < kPasses; ++h) {
        const int m = rw + chunk_row(h), n = chunk_n(h);
        res[h] = m < a.m && chunk8_vec(a, n) ? residual_chunk8(a, m, c0 + n) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
    // Registers 4j, 4j + 1: row lane / 4, group channels n, n + 1; 4j + 2, 4j + 3: row lane / 4 + 8; j = cc * 4 + jj,
    // n = n0 + 8j + (lane % 4) * 2.
    if constexpr (kInRegs) {
      with_silu(a.silu(), [&](auto silu) {  // one SiLU test for the slice's 16 values
#pragma unroll
        for (int jj = 0; jj < kWgEpiCols / 8; ++jj) {
          const int j = cc * (kWgEpiCols / 8) + jj, n = n0 + 8 * j + (lane % 4) * 2;
          const EpiloguePair ep = epilogue_pair(a.bias, a.gamma, c0 + n, n, a.n_g);
#pragma unroll
          for (int e = 0; e < 4; ++e)
            acc[4 * j + e] = epilogue_with<decltype(silu)::value>(acc[4 * j + e], ep.bias[e % 2], ep.gamma[e % 2]);
        }
      });
    }
#pragma unroll
    for (int jj = 0; jj < kWgEpiCols / 8; ++jj) {
      const int j = cc * (kWgEpiCols / 8) + jj, col = jj * 8 + (lane % 4) * 2, r = lane / 4;
      *reinterpret_cast<float2*>(epi + r * kWgEpiRow + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(epi + (r + 8) * kWgEpiRow + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
    __syncwarp();
#pragma unroll
    for (int h = 0; h < kPasses; ++h) {
      const int r = chunk_row(h), m = rw + r, n = chunk_n(h);
      if (m >= a.m || n >= a.n_g) continue;
      const float* src = epi + r * kWgEpiRow + (n - n0 - cc * kWgEpiCols);
      if constexpr (kInRegs) {
        float v[8];
        load_staged8(src, v);
        if (kPrefetch && chunk8_vec(a, n)) store_chunk8_vec(a, m, c0 + n, v, res[h]);
        else store_chunk8(a, m, c0 + n, n, v);
      } else {
        store_staged8(a, src, m, n, g);
      }
    }
    __syncwarp();
  }
}
#endif

}  // namespace yolo12::cuda::conv_detail
