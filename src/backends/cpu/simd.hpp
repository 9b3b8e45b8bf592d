// cpu/simd.hpp - what the CPU kernels share to run fast without giving up portability.
//
// The library is compiled for the baseline x86-64 (SSE2). Hot loops are written once as
// always-inline plain C++ and instantiated twice: in a function compiled for AVX2 + FMA
// (YOLO12_CPU_AVX2, where GCC / Clang vectorize them 8 floats wide) and in a baseline function;
// cpu_has_avx2() picks one at run time. exp_approx() is a branch-free exp that vectorizes, unlike
// std::exp, for SiLU, softmax and sigmoid.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define YOLO12_CPU_X86 1
#define YOLO12_CPU_AVX2 __attribute__((target("avx2,fma")))
#define YOLO12_CPU_INLINE inline __attribute__((always_inline))
#else
#define YOLO12_CPU_AVX2
#define YOLO12_CPU_INLINE inline
#endif

namespace yolo12::cpu {

// True when this CPU runs AVX2 and FMA (checked once).
inline bool cpu_has_avx2() {
#ifdef YOLO12_CPU_X86
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
#else
  return false;
#endif
}

// exp(x) for float, relative error below 2e-7 on [-87, 88] (clamped outside; NaN gives NaN): x = n ln2 + r with
// |r| <= ln2 / 2, exp(r) by a degree-6 polynomial (the classic Cephes expf coefficients), times 2^n
// built in the exponent bits. Rounding to n uses the 1.5 * 2^23 trick, so there is no branch and no
// call and the loops calling it vectorize.
YOLO12_CPU_INLINE float exp_approx(float x) {
  // Clamp to [-87, 88] with bit masks rather than ?: so the loop has no control flow (GCC does not
  // if-convert float compares under its default -ftrapping-math, and would not vectorize).
  const float lo = -87.0f, hi = 88.0f;
  std::int32_t xi, loi, hii;
  std::memcpy(&xi, &x, sizeof xi);
  std::memcpy(&loi, &lo, sizeof loi);
  std::memcpy(&hii, &hi, sizeof hii);
  const std::int32_t below = -static_cast<std::int32_t>(x < lo), above = -static_cast<std::int32_t>(x > hi);
  xi = (xi & ~below) | (loi & below);
  xi = (xi & ~above) | (hii & above);
  std::memcpy(&x, &xi, sizeof x);
  const float shifter = 12582912.0f;  // 1.5 * 2^23
  const float t = x * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  // The low bits of t hold n (+ the 1.5 * 2^23 offset, removed by the subtraction); the exponent
  // is built in unsigned arithmetic, which wraps where signed would be undefined: for NaN (which
  // the clamp lets through, and which gives NaN whatever the scale) t's bits are anything.
  std::uint32_t ni;
  std::memcpy(&ni, &t, sizeof ni);
  const std::uint32_t bits = (ni - 0x4B400000u + 127u) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return e * scale;
}

}  // namespace yolo12::cpu
