// src/backends/cuda/attention.cu - fused area attention, see attention.cuh for the contract.
//
// What it computes: for every image b, area chunk c (tokens [c * Nc, (c + 1) * Nc), Nc = N / area)
// and head h, out = softmax(scale * Q K^T) V over the Nc tokens of the chunk, with Q, K, V read as
// strided per-head channel slices of NHWC token-major buffers (no repacking pass before, none after).
// The Nc x Nc score matrix never leaves the chip: key/value tiles stream through shared memory and
// each query keeps a running max m and running sum l (online softmax, fp32):
//   m' = max(m, max_j s_j);  o = o * 2^(m - m') + sum_j 2^(s_j - m') v_j;  l likewise;  out = o / l
// with s = scale * log2(e) * q.k so that exp2 replaces exp. Fused as well: the optional copy of v
// back out as an image (v_image), so the pe depthwise conv needs no gather.
//
// Kernels:
//   area_attention_flash_f16<DV>  fp16, dqk 32, dv 32 or 64, scale > 0. A block of 5 warps owns 80
//       queries of one (image, chunk, head); each warp 16 queries. Key tiles of 80 tokens are staged
//       in shared memory by cp.async, in a ring of 3 buffers (dv 32) or 2 (dv 64). S = Q K^T and
//       O += P V run on tensor cores (mma.sync m16n8k16, fp16 inputs, fp32 accumulators); P is rounded
//       to fp16 from registers (the S accumulator layout is the A-operand layout of the PV product), and
//       its row sums come from one more MMA with a B of ones; K fragments come from ldmatrix, V
//       fragments from ldmatrix.trans. Needs 16-byte aligned views (pointers, ld and head strides multiples of 8).
//   area_attention_flash_f16_split<DV>  the same per-tile maths for small grids (batch 1): a block of
//       5 warps owns 16 queries and the warps split the chunk's key tiles, merged at the end. It runs
//       where the flash grid leaves SMs idle and its own grid puts at most two blocks on an SM
//       (split_preferred).
//   area_attention_rowwise<T, DQK, DV>  fp32 or fp16, any alignment, any scale. One thread per
//       query, key tiles of 32 tokens in shared memory as fp32, scores in registers, CUDA-core FMAs.
//       The fp32 path, the fallback and the oracle of the tensor-core kernels.
//
// Grid of all three: x = query tile inside the chunk, y = head, z = image * area + chunk.
#include "attention.cuh"

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common.cuh"
#include "ops.cuh"
#include "yolo12/errors.hpp"
#include "launch.cuh"

namespace yolo12::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float load_as_float(const float* p) { return *p; }
__device__ __forceinline__ float load_as_float(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_as_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_from_float(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_from_float(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_from_float(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

constexpr float kLn2 = 0.6931471805599453f;

// The softmax statistics of one query (p.lse, optional): ln sum_j exp(scale * q.k_j) from the running
// max m2 (in log2 units of the scaled score) and the running sum l.
template <typename T>
__device__ __forceinline__ void store_lse(const AreaAttentionParams<T>& p, int b, int h, long long token, float m2,
                                          float l) {
  if (p.lse != nullptr) p.lse[(static_cast<long long>(b) * p.heads + h) * p.tokens + token] = (m2 + log2f(l)) * kLn2;
}

// ---- rowwise kernel: one thread per query ---------------------------------------------------------
//
// Tried and reverted (2026-11-30): four threads per query, each a quarter of the keys, merged by
// shuffles. 41 us instead of 89 us for yolo12n P4 at batch 1 but 2.77 ms instead of 2.14 ms for
// yolo12x P4 at batch 32, and its v_image copy failed the dv = 64 (PSA) tests on the H200 for a
// reason not found before the deadline. This version passed every test there.

constexpr int kRowwiseQueries = 128;  // threads per block, one query each
constexpr int kRowwiseKeys = 32;      // key tile: 32 scores live in registers per thread

template <typename T, int DQK, int DV>
__global__ void __launch_bounds__(kRowwiseQueries)
    area_attention_rowwise(const AreaAttentionParams<T> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  __shared__ float k_tile[kRowwiseKeys][DQK];  // (keys, dqk) of the current tile, zero past the chunk
  __shared__ float v_tile[kRowwiseKeys][DV];   // (keys, dv)

  const int chunk_tokens = p.tokens / p.area;
  const int h = blockIdx.y;
  const int b = blockIdx.z / p.area;
  const int c = blockIdx.z % p.area;
  const long long tok0 = static_cast<long long>(b) * p.tokens + static_cast<long long>(c) * chunk_tokens;
  const T* q = p.q + tok0 * p.ldq + static_cast<long long>(h) * p.q_head_stride;  // (Nc, ldq) head h
  const T* k = p.k + tok0 * p.ldk + static_cast<long long>(h) * p.k_head_stride;  // (Nc, ldk)
  const T* v = p.v + tok0 * p.ldv + static_cast<long long>(h) * p.v_head_stride;  // (Nc, ldv)

  const int qi = blockIdx.x * kRowwiseQueries + threadIdx.x;  // query token inside the chunk
  const bool active = qi < chunk_tokens;
  const float s_scale = p.scale * kLog2e;

  float qr[DQK];  // scaled query, fp32
#pragma unroll
  for (int d = 0; d < DQK; ++d) qr[d] = active ? load_as_float(q + static_cast<long long>(qi) * p.ldq + d) * s_scale : 0.f;

  float acc[DV];
#pragma unroll
  for (int d = 0; d < DV; ++d) acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;

  for (int j0 = 0; j0 < chunk_tokens; j0 += kRowwiseKeys) {
    __syncthreads();  // previous tile fully consumed
    for (int i = threadIdx.x; i < kRowwiseKeys * DQK; i += kRowwiseQueries) {
      const int j = i / DQK, d = i % DQK;
      k_tile[j][d] = j0 + j < chunk_tokens ? load_as_float(k + static_cast<long long>(j0 + j) * p.ldk + d) : 0.f;
    }
    for (int i = threadIdx.x; i < kRowwiseKeys * DV; i += kRowwiseQueries) {
      const int j = i / DV, d = i % DV;
      v_tile[j][d] = j0 + j < chunk_tokens ? load_as_float(v + static_cast<long long>(j0 + j) * p.ldv + d) : 0.f;
    }
    __syncthreads();

    const int valid = chunk_tokens - j0;  // keys of this tile inside the chunk (may exceed the tile)
    float s[kRowwiseKeys];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kRowwiseKeys; ++j) {
      float dot = 0.f;
#pragma unroll
      for (int d = 0; d < DQK; ++d) dot = fmaf(qr[d], k_tile[j][d], dot);
      s[j] = j < valid ? dot : -INFINITY;
      tile_max = fmaxf(tile_max, s[j]);
    }
    const float m_new = fmaxf(m, tile_max);  // finite: every tile holds at least one valid key
    const float corr = exp2f(m - m_new);
    l *= corr;
#pragma unroll
    for (int d = 0; d < DV; ++d) acc[d] *= corr;
#pragma unroll
    for (int j = 0; j < kRowwiseKeys; ++j) {
      const float pj = exp2f(s[j] - m_new);
      l += pj;
#pragma unroll
      for (int d = 0; d < DV; ++d) acc[d] = fmaf(pj, v_tile[j][d], acc[d]);
    }
    m = m_new;
  }

  if (!active) return;
  store_lse(p, b, h, static_cast<long long>(c) * chunk_tokens + qi, m, l);
  const float inv_l = 1.f / l;
  T* out = p.out + (tok0 + qi) * p.ldo + h * DV;  // (dv) channels of this token and head
#pragma unroll
  for (int d = 0; d < DV; ++d) store_from_float(out + d, acc[d] * inv_l);
  if (p.v_image != nullptr) {
    T* vi = p.v_image + (tok0 + qi) * p.ldvi + h * DV;  // (dv)
    const T* vr = v + static_cast<long long>(qi) * p.ldv;
#pragma unroll
    for (int d = 0; d < DV; ++d) vi[d] = vr[d];
  }
}

// ---- tensor-core kernel: 16 queries per warp, mma.sync m16n8k16 -----------------------------------

// Tile sizes chosen for Nc = 400 (every YOLO12 area chunk at 640): 5 warps x 16 = 80 queries and
// 80-key tiles divide 400 exactly. With 4 warps and 64 keys (version 1), 7 x 7 tiles covered
// 448 x 448 for 400 x 400 useful (1.25x the work): 274 us for yolo12x P4 at batch 32.
constexpr int kFlashWarps = 5;
constexpr int kFlashQueries = 16 * kFlashWarps;
constexpr int kFlashKeys = 80;                  // keys per shared-memory tile (a multiple of 16)
constexpr int kFlashDqk = 32;
constexpr int kSmemPad = 8;                     // +16 bytes per row: row starts rotate over the banks

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// D (16x8, fp32) += A (16x16 fp16, row) * B (16x8 fp16, col).
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 fp16 matrices; lane i gives the row address of matrix i / 8, row i % 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// The same, transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem_row) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// 2^x by the special-function unit, denormals flushed: exp2f adds a range fix-up of three
// instructions per call (FSETP, FSEL, FMUL in the SASS of version 1), a third of the softmax cost.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

constexpr int kKStride = kFlashDqk + kSmemPad;  // halves per staged K row
template <int DV>
constexpr int kVStride = DV + kSmemPad;         // halves per staged V row

// One warp's online-softmax state for its 16 query rows. A thread holds rows g and g + 8
// (g = lane / 4) and, of O, columns 8 j + 2 t, 8 j + 2 t + 1 (t = lane % 4).
template <int DV>
struct FlashRows {
  float o[DV / 8][4];  // (16 queries, dv) accumulator tiles, mma C layout
  float m0, m1;        // running max of rows g, g + 8, unscaled (the same in the 4 lanes of a row)
  float l0, l1;        // running sums, partial over this thread's columns until flash_finish_sums
  __device__ __forceinline__ void init() {
#pragma unroll
    for (int j = 0; j < DV / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    m0 = m1 = -INFINITY;
    l0 = l1 = 0.f;
  }
};

// Q rows [row0, row0 + 16) of a head as A fragments (16 x 32: 2 k-steps of 16), zero past the chunk.
__device__ __forceinline__ void flash_load_q(const __half* q,  // (Nc, ldq) head view
                                             int ldq, int row0, int chunk_tokens, int lane, uint32_t (&qa)[2][4]) {
  const int g = lane >> 2, t = lane & 3;
  auto pair = [&](int row, int col) -> uint32_t {
    return row < chunk_tokens ? *reinterpret_cast<const uint32_t*>(q + static_cast<long long>(row) * ldq + col) : 0u;
  };
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    qa[kk][0] = pair(row0 + g, 16 * kk + 2 * t);
    qa[kk][1] = pair(row0 + g + 8, 16 * kk + 2 * t);
    qa[kk][2] = pair(row0 + g, 16 * kk + 8 + 2 * t);
    qa[kk][3] = pair(row0 + g + 8, 16 * kk + 8 + 2 * t);
  }
}

// Stages rows [j0, j0 + kFlashKeys) of a (Nc, ld) head view, COLS halves each, into shared memory
// (kFlashKeys, STRIDE) with 16-byte cp.async; rows past the chunk become zeros (P is 0 there, but
// 0 * garbage is not). Thread `id` of `count` cooperating threads.
template <int COLS, int STRIDE>
__device__ __forceinline__ void flash_stage(__half* dst, const __half* src, int ld, int j0, int chunk_tokens, int id,
                                            int count) {
  for (int i = id; i < kFlashKeys * (COLS / 8); i += count) {
    const int r = i / (COLS / 8), col = (i % (COLS / 8)) * 8;
    __half* d = dst + r * STRIDE + col;
    if (j0 + r < chunk_tokens) cp_async_16(d, src + static_cast<long long>(j0 + r) * ld + col);
    else *reinterpret_cast<uint4*>(d) = make_uint4(0, 0, 0, 0);
  }
}

// One key tile for one warp: S = Q K^T, online softmax update, O += P V.
template <int DV>
__device__ __forceinline__ void flash_tile(const __half (*k_tile)[kKStride],     // (kFlashKeys, dqk) smem
                                           const __half (*v_tile)[kVStride<DV>],  // (kFlashKeys, dv) smem
                                           const uint32_t (&qa)[2][4], int j0, int chunk_tokens, float s_scale,
                                           int lane, FlashRows<DV>& st) {
  const int t = lane & 3;
  // S (unscaled): 16 x kFlashKeys, n-tiles of 8 keys. One ldmatrix.x4 gives the B fragments of both
  // k-steps (dims 0-15, 16-31) of an n-tile.
  float s[kFlashKeys / 8][4];
#pragma unroll
  for (int n = 0; n < kFlashKeys / 8; ++n) {
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
    uint32_t kb[4];
    ldmatrix_x4(kb, &k_tile[8 * n + (lane & 7)][8 * (lane >> 3)]);
    mma_16x8x16(s[n], qa[0], kb[0], kb[1]);
    mma_16x8x16(s[n], qa[1], kb[2], kb[3]);
  }
  if (j0 + kFlashKeys > chunk_tokens) {  // the last tile: keys past the chunk get no weight
#pragma unroll
    for (int n = 0; n < kFlashKeys / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (j0 + 8 * n + 2 * t + (e & 1) >= chunk_tokens) s[n][e] = -INFINITY;
  }
  // Running max in unscaled units (this path requires scale > 0), then
  // p = 2^(s * scale * log2e - m * scale * log2e): one FFMA and one MUFU per score.
  float mx0 = st.m0, mx1 = st.m1;
#pragma unroll
  for (int n = 0; n < kFlashKeys / 8; ++n) {
    mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
    mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
  // Finite: a tile handed to a warp holds at least one key of the chunk. corr is 0 on the first tile.
  const float corr0 = exp2_ftz((st.m0 - mx0) * s_scale), corr1 = exp2_ftz((st.m1 - mx1) * s_scale);
  const float base0 = mx0 * s_scale, base1 = mx1 * s_scale;
  st.m0 = mx0;
  st.m1 = mx1;
  st.l0 *= corr0;
  st.l1 *= corr1;
#pragma unroll
  for (int j = 0; j < DV / 8; ++j) {
    st.o[j][0] *= corr0;
    st.o[j][1] *= corr0;
    st.o[j][2] *= corr1;
    st.o[j][3] *= corr1;
  }
#pragma unroll
  for (int n = 0; n < kFlashKeys / 8; ++n) {
    s[n][0] = exp2_ftz(fmaf(s[n][0], s_scale, -base0));
    s[n][1] = exp2_ftz(fmaf(s[n][1], s_scale, -base0));
    s[n][2] = exp2_ftz(fmaf(s[n][2], s_scale, -base1));
    s[n][3] = exp2_ftz(fmaf(s[n][3], s_scale, -base1));
    st.l0 += s[n][0] + s[n][1];
    st.l1 += s[n][2] + s[n][3];
  }
  // O += P V: P as k-steps of 16 of A fragments straight from the S accumulators.
#pragma unroll
  for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
    const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                            pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                            pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
    for (int jp = 0; jp < DV / 16; ++jp) {
      uint32_t vb[4];  // B fragments of n-tiles 2 jp (vb[0], vb[1]) and 2 jp + 1 (vb[2], vb[3])
      ldmatrix_x4_trans(vb, &v_tile[16 * kk + (lane & 7) + ((lane >> 3) & 1) * 8][16 * jp + (lane >> 4) * 8]);
      mma_16x8x16(st.o[2 * jp], pa, vb[0], vb[1]);
      mma_16x8x16(st.o[2 * jp + 1], pa, vb[2], vb[3]);
    }
  }
}

template <int DV>
__device__ __forceinline__ void flash_finish_sums(FlashRows<DV>& st) {
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 1);
  st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, 2);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 1);
  st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, 2);
}

// v rows [r0, r0 + rows) of the head back out as an image (16-byte copies).
template <int DV>
__device__ __forceinline__ void flash_copy_v_image(const AreaAttentionParams<__half>& p,
                                                   const __half* v,  // (Nc, ldv) head view
                                                   long long tok0, int h, int r0, int rows, int chunk_tokens,
                                                   int id, int count) {
  for (int i = id; i < rows * (DV / 8); i += count) {
    const int r = r0 + i / (DV / 8), col = (i % (DV / 8)) * 8;
    if (r < chunk_tokens)
      *reinterpret_cast<uint4*>(p.v_image + (tok0 + r) * p.ldvi + h * DV + col) =
          *reinterpret_cast<const uint4*>(v + static_cast<long long>(r) * p.ldv + col);
  }
}

// Written out in full rather than through flash_tile: the shared helpers gave this kernel 106
// registers instead of 84 (3 blocks per SM instead of 4) and 12-17% more time at batch 32
// (yolo12x P4: 234 us against 200 us); capping it at 4 blocks per SM spilled.
//
// Key tiles go through a ring of kStages shared-memory buffers. With 3 (dv 32) one block barrier per
// tile suffices: the tile it + 2 is staged into the buffer of tile it - 1 right after the barrier that
// every warp passes only once done with tile it - 1. With 2 (dv 64: three would pass the 48 KB of
// static shared memory) a second barrier ends each tile, as in version 2. (A tree for the tile's max
// took 144 registers instead of 86: fewer blocks per SM.) Four blocks per SM at dv 32 are asked of
// ptxas: the staging offsets kept across tiles would otherwise take it to 104 registers (3 blocks); at
// 96 it spills one word, reloaded once per tile.
template <int DV>
__global__ void __launch_bounds__(kFlashWarps * 32, DV == 32 ? 4 : 1)
    area_attention_flash_f16(const AreaAttentionParams<__half> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int kThreads = kFlashWarps * 32;
  constexpr int kKStride = kFlashDqk + kSmemPad;  // halves per staged K row
  constexpr int kVStride = DV + kSmemPad;         // halves per staged V row
  constexpr int kStages = DV == 32 ? 3 : 2;
  __shared__ alignas(16) __half k_tile[kStages][kFlashKeys][kKStride];  // (stages, keys, dqk)
  __shared__ alignas(16) __half v_tile[kStages][kFlashKeys][kVStride];  // (stages, keys, dv)

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;  // mma fragment coordinates: row group, thread in group
  const int chunk_tokens = p.tokens / p.area;
  const int h = blockIdx.y;
  const int b = blockIdx.z / p.area;
  const int c = blockIdx.z % p.area;
  const long long tok0 = static_cast<long long>(b) * p.tokens + static_cast<long long>(c) * chunk_tokens;
  const __half* q = p.q + tok0 * p.ldq + static_cast<long long>(h) * p.q_head_stride;  // (Nc, ldq)
  const __half* k = p.k + tok0 * p.ldk + static_cast<long long>(h) * p.k_head_stride;  // (Nc, ldk)
  const __half* v = p.v + tok0 * p.ldv + static_cast<long long>(h) * p.v_head_stride;  // (Nc, ldv)
  const int block_q0 = blockIdx.x * kFlashQueries;
  const int row0 = block_q0 + warp * 16 + g;  // this thread's two query rows: row0, row0 + 8
  const int row1 = row0 + 8;

  // Staging: thread tid copies K rows kr + u * kKRowStep (u < kKChunks) of a tile at columns kc, and V rows
  // vr + u * kVRowStep at columns vc. The offsets are worked out once, as 32-bit element offsets from the
  // tile's first row; a tile inside the chunk (every tile when the chunk is a multiple of 80) takes no
  // per-row test.
  constexpr int kKRowStep = kThreads / (kFlashDqk / 8), kVRowStep = kThreads / (DV / 8);
  constexpr int kKChunks = kFlashKeys / kKRowStep, kVChunks = kFlashKeys / kVRowStep;
  static_assert(kKChunks * kKRowStep == kFlashKeys && kVChunks * kVRowStep == kFlashKeys, "whole rows per step");
  const int kr = threadIdx.x / (kFlashDqk / 8), kc = threadIdx.x % (kFlashDqk / 8) * 8;
  const int vr = threadIdx.x / (DV / 8), vc = threadIdx.x % (DV / 8) * 8;
  const int k_off = kr * p.ldk + kc, v_off = vr * p.ldv + vc;  // elements from the tile's first row
  auto load_tile = [&](int j0, int buf) {
    const __half* k0 = k + static_cast<long long>(j0) * p.ldk;  // (kFlashKeys, ldk) this tile's rows
    const __half* v0 = v + static_cast<long long>(j0) * p.ldv;  // (kFlashKeys, ldv)
    const bool whole = j0 + kFlashKeys <= chunk_tokens;
#pragma unroll
    for (int u = 0; u < kKChunks; ++u) {
      __half* dst = &k_tile[buf][kr + u * kKRowStep][kc];
      if (whole || j0 + kr + u * kKRowStep < chunk_tokens) cp_async_16(dst, k0 + k_off + u * kKRowStep * p.ldk);
      else *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kVChunks; ++u) {
      __half* dst = &v_tile[buf][vr + u * kVRowStep][vc];  // zeros past the chunk: P is 0 there, 0 * garbage is not
      if (whole || j0 + vr + u * kVRowStep < chunk_tokens) cp_async_16(dst, v0 + v_off + u * kVRowStep * p.ldv);
      else *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
    }
  };

  const int tiles = (chunk_tokens + kFlashKeys - 1) / kFlashKeys;
  load_tile(0, 0);
  cp_async_commit();
  if (kStages == 3 && tiles > 1) {
    load_tile(kFlashKeys, 1);
    cp_async_commit();
  }

  // v back out as an image for this block's queries (16-byte copies), while tile 0 is in flight.
  if (p.v_image != nullptr) {
    for (int i = threadIdx.x; i < kFlashQueries * (DV / 8); i += kThreads) {
      const int r = block_q0 + i / (DV / 8), col = (i % (DV / 8)) * 8;
      if (r < chunk_tokens)
        *reinterpret_cast<uint4*>(p.v_image + (tok0 + r) * p.ldvi + h * DV + col) =
            *reinterpret_cast<const uint4*>(v + static_cast<long long>(r) * p.ldv + col);
    }
  }

  // Q as A fragments (16 x 32 per warp: 2 k-steps of 16), zero past the chunk.
  uint32_t qa[2][4];
  {
    auto pair = [&](int row, int col) -> uint32_t {
      return row < chunk_tokens ? *reinterpret_cast<const uint32_t*>(q + static_cast<long long>(row) * p.ldq + col) : 0u;
    };
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      qa[kk][0] = pair(row0, 16 * kk + 2 * t);
      qa[kk][1] = pair(row1, 16 * kk + 2 * t);
      qa[kk][2] = pair(row0, 16 * kk + 8 + 2 * t);
      qa[kk][3] = pair(row1, 16 * kk + 8 + 2 * t);
    }
  }

  const float s_scale = p.scale * kLog2e;
  float o[DV / 8][4];  // (16 queries, dv) accumulator tiles of this warp
#pragma unroll
  for (int j = 0; j < DV / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY;  // running max of rows row0, row1, unscaled (same in a quad)
  // Running sums of rows row0 (ls[0], ls[1]) and row1 (ls[2], ls[3]), kept by the tensor cores: P times a
  // B of ones gives each row's sum of its fp16 P (the P that multiplies V) in every column, so the softmax
  // sums cost one MMA per 16 keys instead of one FADD per score and the quad's shuffles at the end.
  float ls[4] = {0.f, 0.f, 0.f, 0.f};
  constexpr uint32_t kOnes = 0x3C003C00u;  // half2(1, 1)

  for (int it = 0; it < tiles; ++it) {
    const int buf = it % kStages;
    if (kStages == 3) {
      if (it + 1 < tiles) cp_async_wait<1>();  // tile it has landed; tile it + 1 may still be in flight
      else cp_async_wait<0>();
      __syncthreads();  // tile it visible to all; every warp is done with tile it - 1
      if (it + 2 < tiles) {
        load_tile((it + 2) * kFlashKeys, (it + 2) % kStages);  // into tile it - 1's buffer
        cp_async_commit();
      }
    } else if (it + 1 < tiles) {
      load_tile((it + 1) * kFlashKeys, buf ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();
    } else {
      cp_async_wait<0>();
      __syncthreads();
    }

    // S = Q K^T (unscaled): 16 x kFlashKeys per warp, n-tiles of 8 keys. One ldmatrix.x4 gives the
    // B fragments of both k-steps (dims 0-15, 16-31) of an n-tile.
    float s[kFlashKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kFlashKeys / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
      uint32_t kb[4];
      ldmatrix_x4(kb, &k_tile[buf][8 * n + (lane & 7)][8 * (lane >> 3)]);
      mma_16x8x16(s[n], qa[0], kb[0], kb[1]);
      mma_16x8x16(s[n], qa[1], kb[2], kb[3]);
    }

    const int j0 = it * kFlashKeys;
    if (j0 + kFlashKeys > chunk_tokens) {  // the last tile: keys past the chunk get no weight
#pragma unroll
      for (int n = 0; n < kFlashKeys / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (j0 + 8 * n + 2 * t + (e & 1) >= chunk_tokens) s[n][e] = -INFINITY;
    }
    // Running max in unscaled units (scale > 0 is required for this path), then
    // p = 2^(s * scale * log2e - m * scale * log2e): one FFMA and one MUFU per score.
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int n = 0; n < kFlashKeys / 8; ++n) {
      mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
      mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float corr0 = exp2_ftz((m0 - mx0) * s_scale), corr1 = exp2_ftz((m1 - mx1) * s_scale);  // 0 at first
    const float base0 = mx0 * s_scale, base1 = mx1 * s_scale;
    m0 = mx0;
    m1 = mx1;
    ls[0] *= corr0;
    ls[1] *= corr0;
    ls[2] *= corr1;
    ls[3] *= corr1;
#pragma unroll
    for (int j = 0; j < DV / 8; ++j) {
      o[j][0] *= corr0;
      o[j][1] *= corr0;
      o[j][2] *= corr1;
      o[j][3] *= corr1;
    }
#pragma unroll
    for (int n = 0; n < kFlashKeys / 8; ++n) {
      s[n][0] = exp2_ftz(fmaf(s[n][0], s_scale, -base0));
      s[n][1] = exp2_ftz(fmaf(s[n][1], s_scale, -base0));
      s[n][2] = exp2_ftz(fmaf(s[n][2], s_scale, -base1));
      s[n][3] = exp2_ftz(fmaf(s[n][3], s_scale, -base1));
    }

    // O += P V: P (16 x kFlashKeys) as k-steps of 16 of A fragments straight from the S accumulators.
#pragma unroll
    for (int kk = 0; kk < kFlashKeys / 16; ++kk) {
      const uint32_t pa[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]), pack_half2(s[2 * kk][2], s[2 * kk][3]),
                              pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      mma_16x8x16(ls, pa, kOnes, kOnes);
#pragma unroll
      for (int jp = 0; jp < DV / 16; ++jp) {
        uint32_t vb[4];  // B fragments of n-tiles 2 jp (vb[0], vb[1]) and 2 jp + 1 (vb[2], vb[3])
        ldmatrix_x4_trans(vb, &v_tile[buf][16 * kk + (lane & 7) + ((lane >> 3) & 1) * 8][16 * jp + (lane >> 4) * 8]);
        mma_16x8x16(o[2 * jp], pa, vb[0], vb[1]);
        mma_16x8x16(o[2 * jp + 1], pa, vb[2], vb[3]);
      }
    }
    if (kStages == 2) __syncthreads();  // this buffer is refilled by the next iteration's prefetch
  }

  const float l0 = ls[0], l1 = ls[2];
  const float inv0 = 1.f / l0, inv1 = 1.f / l1;
  if (t == 0) {
    const long long first = static_cast<long long>(c) * chunk_tokens;  // the chunk's first token in the image
    if (row0 < chunk_tokens) store_lse(p, b, h, first + row0, m0 * s_scale, l0);
    if (row1 < chunk_tokens) store_lse(p, b, h, first + row1, m1 * s_scale, l1);
  }
  __half* out = p.out + tok0 * p.ldo + h * DV;  // (Nc, ldo) head h
#pragma unroll
  for (int j = 0; j < DV / 8; ++j) {
    if (row0 < chunk_tokens)
      *reinterpret_cast<__half2*>(out + static_cast<long long>(row0) * p.ldo + 8 * j + 2 * t) =
          __floats2half2_rn(o[j][0] * inv0, o[j][1] * inv0);
    if (row1 < chunk_tokens)
      *reinterpret_cast<__half2*>(out + static_cast<long long>(row1) * p.ldo + 8 * j + 2 * t) =
          __floats2half2_rn(o[j][2] * inv1, o[j][3] * inv1);
  }
}

// ---- tensor-core kernel for small grids: the keys of a chunk split across the warps ---------------
//
// At batch 1 area_attention_flash_f16 has 20-60 blocks for 132 SMs (H200) and each walks 5 key tiles in
// sequence (9 us a launch for 0.2 us of floor). Here a block owns 16 queries; its 5 warps take the
// chunk's key tiles round-robin (tile w, w + 5, ...: one each at Nc = 400), each staging its own tiles
// in its own shared memory with no block barrier, and the 5 partial softmaxes are merged through
// shared memory at the end. K/V of a chunk are read once per 16 queries (from L2 at these sizes).

template <int DV>
constexpr int flash_split_smem_bytes() {
  return kFlashWarps * kFlashKeys * (kKStride + kVStride<DV>) * static_cast<int>(sizeof(__half));
}

template <int DV>
__global__ void __launch_bounds__(kFlashWarps * 32)
    area_attention_flash_f16_split(const AreaAttentionParams<__half> p) {
  pdl_begin();  // launch.cuh: before any activation is touched
  constexpr int kThreads = kFlashWarps * 32;
  extern __shared__ __align__(16) unsigned char smem[];
  // Per warp: K (kFlashKeys, kKStride) then V (kFlashKeys, kVStride) halves; reused for the merge.
  constexpr int kWarpHalves = kFlashKeys * (kKStride + kVStride<DV>);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int chunk_tokens = p.tokens / p.area;
  const int h = blockIdx.y;
  const int b = blockIdx.z / p.area;
  const int c = blockIdx.z % p.area;
  const long long tok0 = static_cast<long long>(b) * p.tokens + static_cast<long long>(c) * chunk_tokens;
  const __half* q = p.q + tok0 * p.ldq + static_cast<long long>(h) * p.q_head_stride;  // (Nc, ldq)
  const __half* k = p.k + tok0 * p.ldk + static_cast<long long>(h) * p.k_head_stride;  // (Nc, ldk)
  const __half* v = p.v + tok0 * p.ldv + static_cast<long long>(h) * p.v_head_stride;  // (Nc, ldv)
  const int q0 = blockIdx.x * 16;  // the block's 16 query rows

  __half* my_k = reinterpret_cast<__half*>(smem) + warp * kWarpHalves;  // (kFlashKeys, kKStride)
  __half* my_v = my_k + kFlashKeys * kKStride;                         // (kFlashKeys, kVStride)
  const int tiles = (chunk_tokens + kFlashKeys - 1) / kFlashKeys;
  if (warp < tiles) {
    flash_stage<kFlashDqk, kKStride>(my_k, k, p.ldk, warp * kFlashKeys, chunk_tokens, lane, 32);
    flash_stage<DV, kVStride<DV>>(my_v, v, p.ldv, warp * kFlashKeys, chunk_tokens, lane, 32);
  }
  cp_async_commit();
  if (p.v_image != nullptr) flash_copy_v_image<DV>(p, v, tok0, h, q0, 16, chunk_tokens, threadIdx.x, kThreads);
  uint32_t qa[2][4];
  flash_load_q(q, p.ldq, q0, chunk_tokens, lane, qa);

  const float s_scale = p.scale * kLog2e;
  FlashRows<DV> st;
  st.init();
  for (int it = warp; it < tiles; it += kFlashWarps) {
    cp_async_wait<0>();
    __syncwarp();
    flash_tile<DV>(reinterpret_cast<const __half(*)[kKStride]>(my_k),
                   reinterpret_cast<const __half(*)[kVStride<DV>]>(my_v), qa, it * kFlashKeys, chunk_tokens,
                   s_scale, lane, st);
    __syncwarp();  // all lanes done reading before the next tile overwrites
    if (it + kFlashWarps < tiles) {
      flash_stage<kFlashDqk, kKStride>(my_k, k, p.ldk, (it + kFlashWarps) * kFlashKeys, chunk_tokens, lane, 32);
      flash_stage<DV, kVStride<DV>>(my_v, v, p.ldv, (it + kFlashWarps) * kFlashKeys, chunk_tokens, lane, 32);
      cp_async_commit();
    }
  }
  flash_finish_sums(st);

  // Merge: each warp leaves (m, l) per row and its O tile in its own shared memory, as floats.
  __syncthreads();  // every warp is done with its tiles
  float* my_f = reinterpret_cast<float*>(smem) + warp * (kWarpHalves / 2);  // (16 m, 16 l, 16 x DV o)
  if (t == 0) {
    my_f[g] = st.m0;
    my_f[g + 8] = st.m1;
    my_f[16 + g] = st.l0;
    my_f[16 + g + 8] = st.l1;
  }
#pragma unroll
  for (int j = 0; j < DV / 8; ++j) {
    my_f[32 + g * DV + 8 * j + 2 * t] = st.o[j][0];
    my_f[32 + g * DV + 8 * j + 2 * t + 1] = st.o[j][1];
    my_f[32 + (g + 8) * DV + 8 * j + 2 * t] = st.o[j][2];
    my_f[32 + (g + 8) * DV + 8 * j + 2 * t + 1] = st.o[j][3];
  }
  __syncthreads();
  const float* all_f = reinterpret_cast<const float*>(smem);
  __half* out = p.out + tok0 * p.ldo + h * DV;  // (Nc, ldo) head h
  for (int i = threadIdx.x; i < 16 * DV; i += kThreads) {
    const int r = i / DV, col = i % DV;
    if (q0 + r >= chunk_tokens) continue;
    float m = -INFINITY;
    for (int w = 0; w < kFlashWarps; ++w) m = fmaxf(m, all_f[w * (kWarpHalves / 2) + r]);  // finite: warp 0 has tile 0
    float l = 0.f, acc = 0.f;
    for (int w = 0; w < kFlashWarps; ++w) {
      const float* wf = all_f + w * (kWarpHalves / 2);
      const float f = exp2_ftz((wf[r] - m) * s_scale);  // 0 for a warp without tiles (m = -inf)
      l += f * wf[16 + r];
      acc += f * wf[32 + r * DV + col];
    }
    if (col == 0) store_lse(p, b, h, static_cast<long long>(c) * chunk_tokens + q0 + r, m * s_scale, l);
    out[static_cast<long long>(q0 + r) * p.ldo + col] = __float2half_rn(acc / l);
  }
}

// ---- host side ------------------------------------------------------------------------------------

template <typename T>
void check_params(const AreaAttentionParams<T>& p) {
  auto fail = [](const std::string& what) { throw InputError("area attention: " + what); };
  if (!area_attention_can_implement(p.tokens, p.area, p.heads, p.dqk, p.dv))
    fail("unsupported shape: tokens " + std::to_string(p.tokens) + ", area " + std::to_string(p.area) + ", heads " +
         std::to_string(p.heads) + ", dqk " + std::to_string(p.dqk) + ", dv " + std::to_string(p.dv) +
         " (need tokens % area == 0, dqk 32, dv 32 or 64)");
  if (p.batch < 1 || static_cast<long long>(p.batch) * p.area > 65535)
    fail("batch " + std::to_string(p.batch) + " times area " + std::to_string(p.area) + " outside [1, 65535]");
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.out == nullptr) fail("null q, k, v or out");
  const int last_q = (p.heads - 1) * p.q_head_stride + p.dqk, last_k = (p.heads - 1) * p.k_head_stride + p.dqk;
  const int last_v = (p.heads - 1) * p.v_head_stride + p.dv;
  if (p.q_head_stride < 0 || p.k_head_stride < 0 || p.v_head_stride < 0 || p.ldq < last_q || p.ldk < last_k ||
      p.ldv < last_v || p.ldo < p.heads * p.dv || (p.v_image != nullptr && p.ldvi < p.heads * p.dv))
    fail("a row stride (ldq " + std::to_string(p.ldq) + ", ldk " + std::to_string(p.ldk) + ", ldv " +
         std::to_string(p.ldv) + ", ldo " + std::to_string(p.ldo) + ", ldvi " + std::to_string(p.ldvi) +
         ") is smaller than the channels the heads use");
}

bool aligned16(const void* ptr) { return (reinterpret_cast<std::uintptr_t>(ptr) & 15u) == 0; }

template <typename T, int DQK, int DV>
void launch_rowwise(const AreaAttentionParams<T>& p, cudaStream_t stream) {
  const int chunk_tokens = p.tokens / p.area;
  const dim3 grid(ceil_div(chunk_tokens, kRowwiseQueries), p.heads, p.batch * p.area);
  launch_kernel(area_attention_rowwise<T, DQK, DV>, grid, kRowwiseQueries, 0, stream, p);
}

template <int DV>
void launch_flash_f16(const AreaAttentionParams<__half>& p, cudaStream_t stream) {
  const int chunk_tokens = p.tokens / p.area;
  const dim3 grid(ceil_div(chunk_tokens, kFlashQueries), p.heads, p.batch * p.area);
  launch_kernel(area_attention_flash_f16<DV>, grid, kFlashWarps * 32, 0, stream, p);
}

template <int DV>
void launch_flash_f16_split(const AreaAttentionParams<__half>& p, cudaStream_t stream) {
  constexpr int smem = flash_split_smem_bytes<DV>();  // 64 000 B (dv 32), 92 800 B (dv 64)
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(area_attention_flash_f16_split<DV>), smem));
  const int chunk_tokens = p.tokens / p.area;
  const dim3 grid(ceil_div(chunk_tokens, 16), p.heads, p.batch * p.area);
  launch_kernel(area_attention_flash_f16_split<DV>, grid, kFlashWarps * 32, smem, stream, p);
}

// Whether the tensor-core kernels can read these views: 16-byte aligned rows and head slices.
bool flash_f16_applies(const AreaAttentionParams<__half>& p) {
  const bool ld8 = p.ldq % 8 == 0 && p.ldk % 8 == 0 && p.ldv % 8 == 0 && p.ldo % 8 == 0 && p.q_head_stride % 8 == 0 &&
                   p.k_head_stride % 8 == 0 && p.v_head_stride % 8 == 0 && (p.v_image == nullptr || p.ldvi % 8 == 0);
  const bool ptr16 = aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && aligned16(p.out) &&
                     (p.v_image == nullptr || aligned16(p.v_image));
  return ld8 && ptr16 && p.dqk == kFlashDqk && p.scale > 0.f;
}

// The split kernel runs where area_attention_flash_f16 would leave SMs without a block and the split
// grid (16 queries a block) fits at most kSplitBlocksPerSm blocks on each SM (fewer where its shared
// memory allows fewer: 64 KB a block at dv 32, three per Hopper SM). Measured on the H100 with flash v4
// (thirty-third session, test_attention's bench): the split kernel took 5.2 us at 100 blocks, 6.5 at
// 200, 8.4 at 300 (yolo12x's P5 at batch 1) and 11.3 at 400 (a second wave), while the flash kernel
// took 7.4-7.8 us on those grids; so it pays up to about two blocks per SM.
constexpr long long kSplitBlocksPerSm = 2;

template <int DV>
bool split_preferred(long long flash_blocks, long long split_blocks) {
  const DeviceInfo& d = device_info();
  if (flash_blocks >= d.sm_count) return false;
  const long long fit =
      static_cast<long long>(d.smem_per_sm / (flash_split_smem_bytes<DV>() + d.smem_reserved_per_block));
  return split_blocks <= std::min(fit, kSplitBlocksPerSm) * d.sm_count;
}

}  // namespace

bool area_attention_can_implement(int tokens, int area, int heads, int dqk, int dv) {
  return tokens > 0 && area >= 1 && tokens % area == 0 && heads >= 1 && heads <= 65535 && dqk == 32 &&
         (dv == 32 || dv == 64);
}


const char* area_attention_kernel_name(AreaAttentionKernel k) {
  switch (k) {
    case AreaAttentionKernel::flash_f16: return "area_attention_flash_f16";
    case AreaAttentionKernel::flash_f16_split: return "area_attention_flash_f16_split";
    default: return "area_attention_rowwise";
  }
}

template <typename T>
AreaAttentionKernel area_attention_select(const AreaAttentionParams<T>& p) {
  if constexpr (std::is_same_v<T, __half>) {
    if (flash_f16_applies(p)) {
      const int chunk_tokens = p.area > 0 ? p.tokens / p.area : 0;
      const long long grids = static_cast<long long>(p.heads) * p.batch * p.area;  // (image, chunk, head)
      const long long flash_blocks = ceil_div(chunk_tokens, kFlashQueries) * grids;
      const long long split_blocks = ceil_div(chunk_tokens, 16) * grids;
      const bool split = p.dv == 32 ? split_preferred<32>(flash_blocks, split_blocks)
                                    : split_preferred<64>(flash_blocks, split_blocks);
      return split ? AreaAttentionKernel::flash_f16_split : AreaAttentionKernel::flash_f16;
    }
  }
  return AreaAttentionKernel::rowwise;
}

template <typename T>
void area_attention_forward_with(const AreaAttentionParams<T>& p, AreaAttentionKernel kernel, cudaStream_t stream) {
  check_params(p);
  if (kernel == AreaAttentionKernel::rowwise) {
    if (p.dv == 32) launch_rowwise<T, 32, 32>(p, stream);
    else launch_rowwise<T, 32, 64>(p, stream);
    return;
  }
  if constexpr (std::is_same_v<T, __half>) {
    if (flash_f16_applies(p)) {
      if (kernel == AreaAttentionKernel::flash_f16) {
        if (p.dv == 32) launch_flash_f16<32>(p, stream);
        else launch_flash_f16<64>(p, stream);
      } else {
        if (p.dv == 32) launch_flash_f16_split<32>(p, stream);
        else launch_flash_f16_split<64>(p, stream);
      }
      return;
    }
  }
  throw InputError(std::string("area attention: ") + area_attention_kernel_name(kernel) +
                   " needs fp16, 16-byte aligned views (pointers, ld and head strides multiples of 8), dqk 32 "
                   "and scale > 0");
}

template <typename T>
void area_attention_forward_rowwise(const AreaAttentionParams<T>& p, cudaStream_t stream) {
  area_attention_forward_with(p, AreaAttentionKernel::rowwise, stream);
}

template <typename T>
void area_attention_forward(const AreaAttentionParams<T>& p, cudaStream_t stream) {
  area_attention_forward_with(p, area_attention_select(p), stream);
}

template <typename T>
Step bind(const graph::AttentionOp& op, const BindContext<T>& ctx) {
  const graph::AttentionAttrs& a = op.attrs;
  const graph::Value& qv = ctx.value(op.q);
  const int tokens = qv.h * qv.w;
  if (!area_attention_can_implement(tokens, a.area, a.heads, a.dqk, a.dv))
    ctx.cannot_run("area attention with " + std::to_string(tokens) + " tokens, area " + std::to_string(a.area) + ", " +
                   std::to_string(a.heads) + " heads, dqk " + std::to_string(a.dqk) + ", dv " + std::to_string(a.dv));
  AreaAttentionParams<T> p;
  static_cast<graph::AttentionAttrs&>(p) = a;
  p.q = ctx.ptr(op.q);
  p.k = ctx.ptr(op.k);
  p.v = ctx.ptr(op.v);
  p.ldq = ctx.ld(op.q);
  p.ldk = ctx.ld(op.k);
  p.ldv = ctx.ld(op.v);
  p.out = ctx.ptr(op.out);
  p.ldo = ctx.ld(op.out);
  p.v_image = ctx.ptr(op.v_image);
  p.ldvi = ctx.ld(op.v_image);
  p.tokens = tokens;
  const double per_area = 1.0 * tokens / a.area;
  Step step;
  step.run = with_batch(p, &area_attention_forward<T>);
  step.label = "attention " + std::to_string(tokens) + " tokens, area " + std::to_string(a.area) + ", " +
               std::to_string(a.heads) + " heads, d " + std::to_string(a.dqk) + "/" + std::to_string(a.dv);
  step.bytes_per_image = sizeof(T) * 1.0 * tokens * a.heads * (a.dqk * 2 + a.dv * 2 + (p.v_image ? a.dv : 0));
  step.flops_per_image = 2.0 * a.heads * a.area * per_area * per_area * (a.dqk + a.dv);
  return step;
}

template Step bind<float>(const graph::AttentionOp&, const BindContext<float>&);
template Step bind<__half>(const graph::AttentionOp&, const BindContext<__half>&);
template AreaAttentionKernel area_attention_select<float>(const AreaAttentionParams<float>&);
template AreaAttentionKernel area_attention_select<__half>(const AreaAttentionParams<__half>&);
template void area_attention_forward_rowwise<float>(const AreaAttentionParams<float>&, cudaStream_t);
template void area_attention_forward_rowwise<__half>(const AreaAttentionParams<__half>&, cudaStream_t);
template void area_attention_forward<float>(const AreaAttentionParams<float>&, cudaStream_t);
template void area_attention_forward<__half>(const AreaAttentionParams<__half>&, cudaStream_t);
template void area_attention_forward_with<float>(const AreaAttentionParams<float>&, AreaAttentionKernel, cudaStream_t);
template void area_attention_forward_with<__half>(const AreaAttentionParams<__half>&, AreaAttentionKernel, cudaStream_t);
// bf16 (rowwise only) for python/yolo12_torch
template AreaAttentionKernel area_attention_select<__nv_bfloat16>(const AreaAttentionParams<__nv_bfloat16>&);
template void area_attention_forward<__nv_bfloat16>(const AreaAttentionParams<__nv_bfloat16>&, cudaStream_t);
template void area_attention_forward_with<__nv_bfloat16>(const AreaAttentionParams<__nv_bfloat16>&, AreaAttentionKernel,
                                                         cudaStream_t);

}  // namespace yolo12::cuda
