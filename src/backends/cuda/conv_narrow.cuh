// src/backends/cuda/conv_narrow.cuh - the parts of conv2d_narrow_f16 (conv_narrow.cu) that run the same on
// the host: the shared-memory layout, the weight and A-tile loads (given a 16-byte copy), and the
// epilogue's staging and stores. The kernel calls them with cp.async; the [narrow] tests in
// tests/gpu/test_conv.cu replay them on the CPU, lane by lane, against the double reference.
//
// One block = 4 or 8 warps (ConvPlan::warps; 32 or 16 rows each). Per pixel tile of 128 output rows
// (m = tile * 128 + r, r = A row):
//   A stage (128, a_row) halves: row r = the whole K of pixel m, column k = tap * cin_pad + ci, then zeros
//                                up to k16 (K rounded up to 16, the MMA's K step);
//   B       (bn, b_row) halves:  row n = packed weights [n][0, k16) of output channel n (zero rows n >= n_g),
//                                loaded once per block and kept;
//   C       warps x (8, c_row) fp32: each warp's staging rows for its 16-byte stores.
// a_row = b_row = k16 + 8 halves: an odd number of 16-byte units, so the 8 row addresses of each ldmatrix
// phase (and each 8 lanes' cp.async writes) fall in distinct banks.
#pragma once

#include <cstdint>

#include "conv_gemm.cuh"

namespace yolo12::cuda::conv_detail {

constexpr int kNarrowRows = 128;     // output pixels per tile: one A row per pixel
// warps = 4 or 8: warp w computes rows [w * 128 / warps, (w + 1) * 128 / warps) x all bn channels.
inline constexpr int narrow_threads(int warps) { return warps * 32; }
constexpr int kNarrowStageRows = 8;  // rows a warp stages at a time before its 16-byte stores
constexpr int kNarrowMaxN = 128;     // c_out the kernel takes (the N tile is all of it)
constexpr int kNarrowMaxK = 320;     // k16 it takes: 3x3 up to 32 input channels, 1x1 up to 320
// Where f16_plan picks it by default: kNarrowPickMaxN, kNarrowPickMaxK (conv_detail.cuh).

// The N tile for n_g output channels: 8, 16, 32, 48, 64, 80, 96 or 128.
__host__ __device__ inline int narrow_bn(int n_g) {
  if (n_g <= 8) return 8;
  if (n_g <= 64) return (n_g + 15) / 16 * 16;
  if (n_g <= 80) return 80;
  if (n_g <= 96) return 96;
  return 128;
}

// Byte offsets from the block's dynamic shared memory: B at 0, the A stages at a_off, the staging at c_off.
struct NarrowLayout {
  int a_row = 0, b_row = 0;  // halves per A / B row
  int c_row = 0;             // floats per staging row: bn + 8 (24 for bn 8): float2 writes of a half-warp
                             // (4 rows x 4 lanes) cover 32 distinct banks
  int a_stage_bytes = 0;
  int a_off = 0, c_off = 0, bytes = 0;
};

__host__ __device__ inline NarrowLayout narrow_layout(int bn, int k16, int stages, int warps) {
  NarrowLayout l;
  l.a_row = l.b_row = k16 + 8;
  l.c_row = bn == 8 ? 24 : bn + 8;
  l.a_stage_bytes = kNarrowRows * l.a_row * 2;
  l.a_off = bn * l.b_row * 2;
  l.c_off = l.a_off + stages * l.a_stage_bytes;
  l.bytes = l.c_off + warps * kNarrowStageRows * l.c_row * 4;
  return l;
}

// The kernel's parameters: the GEMM's, plus the plan's.
struct NarrowParams {
  ImplicitGemmParams<__half> g;
  NarrowLayout layout;
  int k16;     // K rounded up to 16: the A / B columns the MMAs read
  int stages;  // pixel tiles in the pipeline (2..4)
  int tiles;   // ceil(M / 128)
};

// Lanes that share one A row in the vector gather: the widest power of two <= min(16-byte chunks per tap, 8),
// so that neighbouring lanes read neighbouring chunks of one pixel (whole 32-byte sectors).
__host__ __device__ inline int narrow_lanes_per_row(int chunks_per_tap) {
  int lanes = 1;
  while (lanes * 2 <= chunks_per_tap && lanes * 2 <= 8) lanes *= 2;
  return lanes;
}

// copy(dst, src): 16 bytes from global src into shared dst, or 16 zero bytes when src is null.

// B: rows n < bn, columns [0, k16) of the packed weights (k16 <= k_pad), zero rows for n >= n_g. Thread tid of
// `threads`.
#pragma nv_exec_check_disable
template <typename Copy16>
__host__ __device__ void narrow_load_weights(const ImplicitGemmParams<__half>& a, int bn, int k16, int b_row, __half* bs,
                                             int tid, int threads, const Copy16& copy) {
  const int chunks = k16 / kChunk;
  for (int i = tid; i < bn * chunks; i += threads) {
    const int n = i / chunks, c = i - n * chunks;
    copy(bs + n * b_row + c * kChunk, n < a.n_g ? a.w + static_cast<long long>(n) * a.k_pad + c * kChunk : nullptr);
  }
}

// An input tile with its halo into shared memory (conv2d_halo_f16, conv2d_halo_pair_f16): rows x cols pixels from
// image pixel (iy0, ix0) on, `chunks` 16-byte chunks of channels each, pixel p of the tile (row-major, cols wide) at
// dst + p * pix_halves; 16 zero bytes for a pixel outside the image. img is one image, (h, w, ldx). The work items
// (pixel, chunk) go to thread tid of `threads` in turn; each thread works out its first item's coordinates once and
// steps them by `threads` items (a chunk carry, then a column carry), so an item costs no division (the thirty-sixth
// session's SASS: about 55 instructions per 16-byte copy with a division per item).
#pragma nv_exec_check_disable
template <typename Copy16>
__host__ __device__ void copy_image_tile(const __half* img, int h, int w, int ldx, int iy0, int ix0, int rows, int cols,
                                         int chunks, __half* dst, int pix_halves, int tid, int threads,
                                         const Copy16& copy) {
  const int items = rows * cols * chunks;
  const int step_px = threads / chunks, step_c = threads - step_px * chunks;  // a step, in pixels and chunks
  const int step_y = step_px / cols, step_x = step_px - step_y * cols;        // ... the pixels in rows and columns
  int px = tid / chunks, c = tid - px * chunks;
  int ty = px / cols, tx = px - ty * cols;
  for (int i = tid; i < items; i += threads) {
    const int iy = iy0 + ty, ix = ix0 + tx;
    const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
    copy(dst + (ty * cols + tx) * pix_halves + c * kChunk,
         inside ? img + (static_cast<long long>(iy) * w + ix) * ldx + c * kChunk : nullptr);
    c += step_c;
    const int carry = c >= chunks ? 1 : 0;  // step_c < chunks: at most one carry
    c -= carry * chunks;
    tx += step_x + carry;                   // step_x + carry <= cols: at most one carry
    const int wrap = tx >= cols ? 1 : 0;
    tx -= wrap * cols;
    ty += step_y + wrap;
  }
}

// Calls f(dst, src) for every tap of A row r of pixel tile `tile`: dst = the row's cin_pad columns of the
// tap in the shared tile `as`, src = the tap's input pixel (its cin_g channels), null outside the image.
#pragma nv_exec_check_disable
template <typename F>
__host__ __device__ void narrow_for_each_tap(const ImplicitGemmParams<__half>& a, int tile, int r, int a_row, __half* as,
                                             const F& f) {
  const int m = tile * kNarrowRows + r;
  __half* row = as + r * a_row;
  if (is_pointwise(a)) {  // 1x1: row m reads pixel m (no divisions)
    f(row, m < a.m ? a.x + static_cast<long long>(m) * a.ldx : static_cast<const __half*>(nullptr));
    return;
  }
  const RowOrigin<__half> o = row_origin(a, m, 0);
  for (int ky = 0; ky < a.k; ++ky) {
    const int iy = o.iy0 + ky * a.dilation;
    for (int kx = 0; kx < a.k; ++kx) {
      const int ix = o.ix0 + kx * a.dilation;
      const bool inside = iy >= 0 && iy < a.h && ix >= 0 && ix < a.w_in;
      f(row + (ky * a.k + kx) * a.cin_pad,
        inside ? o.base + (static_cast<long long>(iy) * a.w_in + ix) * a.ldx : static_cast<const __half*>(nullptr));
    }
  }
}

// The A tile of pixel tile `tile` with 16-byte copies (a.vec_a: cin_g == cin_pad, 16-byte aligned pixels).
// lanes = narrow_lanes_per_row threads per row, each taking every lanes-th chunk of each tap.
#pragma nv_exec_check_disable
template <typename Copy16>
__host__ __device__ void narrow_gather_vec(const ImplicitGemmParams<__half>& a, int tile, int a_row, int k16, __half* as,
                                           int tid, int threads, const Copy16& copy) {
  const int per_tap = a.cin_pad / kChunk;
  const int lanes = narrow_lanes_per_row(per_tap);
  const int q = tid % lanes;
  for (int r = tid / lanes; r < kNarrowRows; r += threads / lanes) {
    narrow_for_each_tap(a, tile, r, a_row, as, [&](__half* dst, const __half* src) {
      for (int c = q; c < per_tap; c += lanes) copy(dst + c * kChunk, src ? src + c * kChunk : nullptr);
    });
    if (q == 0 && a.k_real < k16) copy(as + r * a_row + a.k_real, nullptr);  // k16 - k_real is 0 or 8
  }
}

// The same tile with scalar loads and 16-byte shared stores, one row per thread: any cin_g, any alignment
// (the stem's 3 channels, slices at odd offsets). Channels cin_g .. cin_pad - 1 of each tap are zero.
__host__ __device__ inline void narrow_gather_scalar(const ImplicitGemmParams<__half>& a, int tile, int a_row, int k16,
                                                     __half* as, int tid, int threads) {
  const int per_tap = a.cin_pad / kChunk;
  for (int r = tid; r < kNarrowRows; r += threads) {
    narrow_for_each_tap(a, tile, r, a_row, as, [&](__half* dst, const __half* src) {
      for (int c = 0; c < per_tap; ++c) {
        std::uint32_t word[kChunk / 2];  // channel pairs, low half first (the memory order of two halves)
#pragma unroll
        for (int j = 0; j < kChunk; j += 2) {
          const int ci = c * kChunk + j;
          const __half lo = src && ci < a.cin_g ? load_nc(src + ci) : __float2half_rn(0.f);
          const __half hi = src && ci + 1 < a.cin_g ? load_nc(src + ci + 1) : __float2half_rn(0.f);
          word[j / 2] = static_cast<std::uint32_t>(__half_as_ushort(lo)) |
                        static_cast<std::uint32_t>(__half_as_ushort(hi)) << 16;
        }
        *reinterpret_cast<uint4*>(dst + c * kChunk) = make_uint4(word[0], word[1], word[2], word[3]);
      }
    });
    if (a.k_real < k16) *reinterpret_cast<uint4*>(as + r * a_row + a.k_real) = make_uint4(0, 0, 0, 0);
  }
}

// The bias and gamma of a lane's 2 * NI output channels in the mma.sync accumulator layout (n8 block j, channels
// j * 8 + (lane % 4) * 2 and the next), loaded once per kernel: 0 and 1 past n_g or where the conv has none.
template <int NI>
__device__ __forceinline__ void narrow_lane_bias_gamma(const ImplicitGemmParams<__half>& a, int lane,
                                                       float2 (&bias)[NI], float2 (&gamma)[NI]) {
#pragma unroll
  for (int j = 0; j < NI; ++j) {
    const int n = j * 8 + (lane % 4) * 2;
    const bool ok0 = n < a.n_g, ok1 = n + 1 < a.n_g;
    bias[j] = make_float2(a.bias && ok0 ? __ldg(a.bias + n) : 0.f, a.bias && ok1 ? __ldg(a.bias + n + 1) : 0.f);
    gamma[j] = make_float2(a.gamma && ok0 ? __ldg(a.gamma + n) : 1.f, a.gamma && ok1 ? __ldg(a.gamma + n + 1) : 1.f);
  }
}

// Staging pass h (0: accumulator elements 0..1, rows lane / 4; 1: elements 2..3, rows lane / 4 + 8 of the
// m16 block) of one lane: v[j] = its two finished values of n8 block j, written to staging row lane / 4.
template <int NI>
__host__ __device__ inline void narrow_stage(float* cs, int c_row, int lane, const float (&v)[NI][2]) {
#pragma unroll
  for (int j = 0; j < NI; ++j) {
    float* p = cs + (lane / 4) * c_row + j * 8 + (lane % 4) * 2;
    p[0] = v[j][0];
    p[1] = v[j][1];
  }
}

// The warp's 8 staged rows (output rows m0 .. m0 + 7, bn channels each; those below m_end, -1: below a.m)
// into y: the residual added in fp32, one rounding to half, 16-byte loads and stores where vec_out, element by
// element otherwise.
template <int BN>
__host__ __device__ inline void narrow_store_staged(const ImplicitGemmParams<__half>& a, const float* cs, int c_row, int m0,
                                                    int lane, int m_end = -1) {
  if (m_end < 0 || m_end > a.m) m_end = a.m;
  constexpr int kChunksN = BN / 8;
  for (int idx = lane; idx < kNarrowStageRows * kChunksN; idx += 32) {
    const int r = idx / kChunksN, q = idx % kChunksN;
    const int m = m0 + r, n = q * 8;
    if (m >= m_end || n >= a.n_g) continue;
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = cs[r * c_row + n + e];
    __half* yp = a.y + static_cast<long long>(m) * a.ldy + n;
    const __half* rp = a.residual ? a.residual + static_cast<long long>(m) * a.ldr + n : nullptr;
    if (a.vec_out && n + 8 <= a.n_g) {
      if (rp) {
        float r[8];
        unpack8(load_nc(reinterpret_cast<const uint4*>(rp)), r);
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] += r[e];
      }
      *reinterpret_cast<uint4*>(yp) = pack8(v);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (n + e < a.n_g) yp[e] = __float2half_rn(v[e] + (rp ? __half2float(rp[e]) : 0.f));
    }
  }
}

}  // namespace yolo12::cuda::conv_detail
