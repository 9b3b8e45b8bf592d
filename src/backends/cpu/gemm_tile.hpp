// cpu/gemm_tile.hpp - the register-tile matrix kernel shared by conv (im2col GEMM) and attention.
//
//   c[i][j] = sum_{kk < K} a[kk][i] * b[kk][j]     i < kGemmMR, j < kGemmNR
//
// a is a packed strip of MR rows of the left matrix (K x MR, row kk holds column kk of those rows),
// b a packed strip of NR columns of the right matrix (K x NR); c is MR x NR, row-major, and is
// overwritten. An AVX2 + FMA version (12 accumulator registers) is picked at run time where the CPU
// has it; otherwise a plain loop nest.
#pragma once

namespace yolo12::cpu {

constexpr int kGemmMR = 6;
constexpr int kGemmNR = 16;

using GemmTileFn = void (*)(int K, const float* a,  // (K, MR)
                            const float* b,         // (K, NR)
                            float* c);              // (MR, NR)

// The kernel for this CPU.
GemmTileFn gemm_tile_kernel();

}  // namespace yolo12::cpu
