// cpu/gemm_tile.cpp - see gemm_tile.hpp.
#include "backends/cpu/gemm_tile.hpp"

#include <cstddef>

#include "backends/cpu/simd.hpp"

#ifdef YOLO12_CPU_X86
#include <immintrin.h>
#endif

namespace yolo12::cpu {
namespace {

constexpr int MR = kGemmMR;
constexpr int NR = kGemmNR;

void tile_kernel_generic(int K, const float* a,  // (K, MR) packed weights
                         const float* b,         // (K, NR) packed im2col strip
                         float* c) {             // (MR, NR)
  float acc[MR][NR] = {};
  for (int kk = 0; kk < K; ++kk) {
    const float* ak = a + static_cast<std::ptrdiff_t>(kk) * MR;
    const float* bk = b + static_cast<std::ptrdiff_t>(kk) * NR;
    for (int i = 0; i < MR; ++i) {
      const float ai = ak[i];
      for (int j = 0; j < NR; ++j) acc[i][j] += ai * bk[j];
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * NR + j] = acc[i][j];
}

#ifdef YOLO12_CPU_X86
static_assert(MR == 6 && NR == 16, "the AVX2 tile kernel is written for 6 x 16");
YOLO12_CPU_AVX2 void tile_kernel_avx2(int K, const float* a, const float* b, float* c) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(),
         c11 = _mm256_setzero_ps(), c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(),
         c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps(), c40 = _mm256_setzero_ps(),
         c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int kk = 0; kk < K; ++kk, a += MR, b += NR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(ai, b0, c00);
    c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10);
    c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20);
    c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30);
    c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40);
    c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50);
    c51 = _mm256_fmadd_ps(ai, b1, c51);
  }
  _mm256_storeu_ps(c + 0 * NR, c00);
  _mm256_storeu_ps(c + 0 * NR + 8, c01);
  _mm256_storeu_ps(c + 1 * NR, c10);
  _mm256_storeu_ps(c + 1 * NR + 8, c11);
  _mm256_storeu_ps(c + 2 * NR, c20);
  _mm256_storeu_ps(c + 2 * NR + 8, c21);
  _mm256_storeu_ps(c + 3 * NR, c30);
  _mm256_storeu_ps(c + 3 * NR + 8, c31);
  _mm256_storeu_ps(c + 4 * NR, c40);
  _mm256_storeu_ps(c + 4 * NR + 8, c41);
  _mm256_storeu_ps(c + 5 * NR, c50);
  _mm256_storeu_ps(c + 5 * NR + 8, c51);
}
#endif

}  // namespace

GemmTileFn gemm_tile_kernel() {
#ifdef YOLO12_CPU_X86
  if (cpu_has_avx2()) return tile_kernel_avx2;
#endif
  return tile_kernel_generic;
}

}  // namespace yolo12::cpu
