// src/backends/cuda/mma.cuh - the PTX wrappers the tensor-core conv kernels share: cp.async (16-byte global ->
// shared copies, zero-filled when src_bytes is 0), ldmatrix (8x8 b16 tiles from shared memory into the
// mma fragment layout) and mma.sync m16n8k16 and m16n8k8 (fp16 in, fp32 accumulate). sm_80 and later.
//
// Fragment layout of mma.sync m16n8k16 .row.col (thread t of the warp, g = t / 4, c = t % 4):
//   A (16 x 16, row-major):  a[0] = A[g][2c..2c+1], a[1] = A[g+8][2c..], a[2] = A[g][2c+8..], a[3] = A[g+8][2c+8..]
//   B (16 x 8, stored [n][k]): b0 = B[n=g][k=2c..2c+1], b1 = B[n=g][k=2c+8..]
//   D (16 x 8, fp32):        d[0..1] = D[g][2c..2c+1], d[2..3] = D[g+8][2c..2c+1]
// ldmatrix.x4 gives thread t, from the four 8x8 tiles whose row addresses lanes 8j..8j+7 supply,
// r[j] = tile_j[t / 4][2 * (t % 4) .. + 1]; .x2 uses the addresses of lanes 0..15 only.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "mma_layout.hpp"

namespace yolo12::cuda::conv_detail {

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy bypassing L1 (.cg); src_bytes = 0 writes zeros without reading.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
// The same through L1 (.ca): for gathers that read each input several times (k x k taps).
__device__ __forceinline__ void cp_async_16_ca(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
// The copy the kernels' tile loads take (conv_narrow.cuh, conv_depthwise.cuh): 16 bytes from global src
// into shared dst, or 16 zero bytes for a null src (reading nothing from `any`, a valid address); through
// L1 (.ca) where kL1, for gathers that read each input several times, else L2 only (.cg).
template <bool kL1>
struct CpAsyncZfill16 {
  const void* any;
  __device__ void operator()(__half* dst, const __half* src) const {
    const void* from = src ? static_cast<const void*>(src) : any;
    if constexpr (kL1) cp_async_16_ca(dst, from, src ? 16 : 0);
    else cp_async_16(dst, from, src ? 16 : 0);
  }
};
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
// wait_group with a run-time count (uniform over the block), for pipelines whose depth is chosen at launch.
__device__ __forceinline__ void cp_async_wait_dyn(int pending) {
  switch (pending) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    default: cp_async_wait<3>(); break;
  }
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x2(std::uint32_t (&r)[2], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                          std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// mma.sync m16n8k8 (fp16 in, fp32 accumulate): d += A (16 x 8) * B (8 x 8). Fragments, as for m16n8k16 above with
// K 8: a0 = A[g][2c..2c+1], a1 = A[g+8][2c..2c+1] (so the ldmatrix.x4 A fragment of a 16 x 16 tile is two of them,
// K columns 0-7 in its a[0], a[1] and 8-15 in a[2], a[3]); b0 = B[n=g][k=2c..2c+1].
__device__ __forceinline__ void mma_1688(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t b0) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(b0));
}

// The accumulators of a warp's MI x NI grid of m16n8 tiles.
template <int MI, int NI>
__device__ __forceinline__ void zero_accumulators(float (&acc)[MI][NI][4]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}
// acc[i][j] += A_i * B_j over one K step of 16, for every tile of the grid.
template <int MI, int NI>
__device__ __forceinline__ void mma_grid(float (&acc)[MI][NI][4], const std::uint32_t (&af)[MI][4],
                                         const std::uint32_t (&bf)[NI][2]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) mma_16816(acc[i][j], af[i], bf[j][0], bf[j][1]);
}

// The A fragment of rows [row0, row0 + 16) and K columns [k0, k0 + 16) of a row-major shared tile whose
// rows are row_halves apart.
__device__ __forceinline__ void load_a_frag(std::uint32_t (&af)[4], const __half* tile, int row_halves, int row0, int k0,
                                            int lane) {
  ldmatrix_x4(af, tile + a_frag_lane_offset(row_halves, row0, k0, lane));
}
// The B fragments of two n8 blocks, channels [n0, n0 + 8) into b_lo and [n0 + 8, n0 + 16) into b_hi, K columns
// [k0, k0 + 16), of a shared tile stored [n][k] with rows row_halves apart.
__device__ __forceinline__ void load_b_frag_pair(std::uint32_t (&b_lo)[2], std::uint32_t (&b_hi)[2], const __half* tile,
                                                 int row_halves, int n0, int k0, int lane) {
  std::uint32_t r[4];
  ldmatrix_x4(r, tile + b_pair_lane_offset(row_halves, n0, k0, lane));
  b_lo[0] = r[0];
  b_lo[1] = r[1];
  b_hi[0] = r[2];
  b_hi[1] = r[3];
}
// One n8 block's B fragment (channels [n0, n0 + 8)).
__device__ __forceinline__ void load_b_frag(std::uint32_t (&bf)[2], const __half* tile, int row_halves, int n0, int k0,
                                            int lane) {
  ldmatrix_x2(bf, tile + b_single_lane_offset(row_halves, n0, k0, lane));
}

// MT m16 tiles x all NI n8 blocks over K columns [0, k16) from shared tiles, the A rows addressed through a K table
// (conv2d_halo_f16, conv2d_halo_pair_f16): lane l's row of m16 tile i starts at arow[i] (its row l % 16), and 8-column
// group j of K is at arow[i] + tab[j], or the 8 zero halves `zero` where tab[j] < 0. The tiles share each K step's
// table entry and B fragments (two tiles per warp: one table load and one set of B loads per two tiles' MMAs). B
// stored [n][k], rows b_row halves apart. acc is zeroed first; fp32 sums in K order, so each tile's sums are the
// same whatever MT is.
template <int NI, int MT>
__device__ __forceinline__ void mma_rows_by_table(float (&acc)[MT][NI][4], const __half* const (&arow)[MT],
                                                  const int* tab, const __half* zero, const __half* bs, int b_row,
                                                  int k16, int lane) {
  static_assert(NI == 1 || NI % 2 == 0, "B fragments are read one n8 block (NI 1) or two at a time");
  zero_accumulators(acc);
#pragma unroll 2
  for (int ks = 0; ks < k16; ks += 16) {
    std::uint32_t af[MT][4], bf[NI][2];
    const int off = tab[ks / 8 + lane / 16];  // lanes 16-31 address the K step's second 8 columns
#pragma unroll
    for (int i = 0; i < MT; ++i) ldmatrix_x4(af[i], off >= 0 ? arow[i] + off : zero);
    if constexpr (NI == 1) {
      load_b_frag(bf[0], bs, b_row, 0, ks, lane);
    } else {
#pragma unroll
      for (int j = 0; j < NI; j += 2) load_b_frag_pair(bf[j], bf[j + 1], bs, b_row, j * 8, ks, lane);
    }
    mma_grid(acc, af, bf);
  }
}
// One m16 tile (MT = 1).
template <int NI>
__device__ __forceinline__ void mma_rows_by_table(float (&acc)[1][NI][4], const __half* arow, const int* tab,
                                                  const __half* zero, const __half* bs, int b_row, int k16, int lane) {
  const __half* const rows[1] = {arow};
  mma_rows_by_table<NI, 1>(acc, rows, tab, zero, bs, b_row, k16, lane);
}

}  // namespace yolo12::cuda::conv_detail
