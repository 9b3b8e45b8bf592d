// tests/gpu/kernel_test_support.cuh - small pieces the kernel tests that launch kernels directly share
// (test_stem_pair.cu, test_halo_pair.cu): a conv variant switch set for a scope, a device array, a poisoned output
// slice and its read-back, the fp16 bound of a result, and a median of CUDA event timings.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/conv_detail.cuh"
#include "catch.hpp"
#include "ops/op_suite.hpp"
#include "support.hpp"

namespace yolo12::test {

// One conv variant switch (conv_detail::ConvVariants) set for the life of this object.
struct VariantScope {
  bool cuda::conv_detail::ConvVariants::*field;
  bool was;
  VariantScope(bool cuda::conv_detail::ConvVariants::*f, bool on) : field(f), was(cuda::conv_detail::conv_variants().*f) {
    cuda::conv_detail::conv_variants().*f = on;
  }
  ~VariantScope() { cuda::conv_detail::conv_variants().*field = was; }
  VariantScope(const VariantScope&) = delete;
  VariantScope& operator=(const VariantScope&) = delete;
};

// n elements of T in device memory (at least one), freed with the object.
template <typename T>
struct DeviceArray {
  T* p = nullptr;
  explicit DeviceArray(std::size_t n) { REQUIRE(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)) == cudaSuccess); }
  ~DeviceArray() { cudaFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  void download(std::vector<T>& v) const {
    REQUIRE(cudaMemcpy(v.data(), p, v.size() * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  }
};

// Throws where a CUDA call failed (Catch reports the exception as the test case's failure). The non-template members
// below use this rather than REQUIRE: with Catch2 v3's REQUIRE in them, nvcc 13.0's cudafe++ never finished compiling
// test_halo_pair.cu and test_stem_pair.cu (seen on the GPU machine and with Debian's Catch2 3.7 here).
inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// An fp16 output slice in device memory: channels [c0, c0 + c) of `rows` rows of ld halves. poison() writes NaN inside
// the slice and the guard value around it; read() returns the slice as doubles, (rows, c) dense, counting the values
// still not finite (never written) and the guard values changed (written outside the slice).
struct OutputSlice {
  static constexpr float kGuardValue = 7.25f;
  __half* d = nullptr;
  std::size_t rows = 0;
  int ld = 0, c0 = 0, c = 0;
  void poison() const {
    std::vector<__half> y(rows * ld, __float2half_rn(kGuardValue));
    for (std::size_t r = 0; r < rows; ++r)
      for (int ch = 0; ch < c; ++ch) y[r * ld + c0 + ch] = __float2half_rn(NAN);
    cuda_ok(cudaMemcpy(d, y.data(), y.size() * sizeof(__half), cudaMemcpyHostToDevice), "poison");
  }
  std::vector<double> read(int& unwritten, int& guard_changed) const {
    std::vector<__half> y(rows * ld);
    cuda_ok(cudaMemcpy(y.data(), d, y.size() * sizeof(__half), cudaMemcpyDeviceToHost), "read");
    std::vector<double> got;
    got.reserve(rows * c);
    unwritten = guard_changed = 0;
    std::uint16_t guard_bits;
    const __half guard = __float2half_rn(kGuardValue);
    std::memcpy(&guard_bits, &guard, 2);
    for (std::size_t i = 0; i < y.size(); ++i) {
      const int ch = static_cast<int>(i % ld) - c0;
      if (ch >= 0 && ch < c) {
        const float v = __half2float(y[i]);
        if (!std::isfinite(v)) ++unwritten;
        got.push_back(v);
      } else {
        std::uint16_t bits;
        std::memcpy(&bits, &y[i], 2);
        if (bits != guard_bits) ++guard_changed;
      }
    }
    return got;
  }
};

// The fp16 bound of a kernel's result against the double reference `ref`: twice the rel L2 of a naive fp16
// implementation (the reference rounded to half), at least 2e-4, as test_conv's. REQUIREs first that the reference is
// not a near-zero output (a test on one would prove nothing).
inline double fp16_bound(const std::vector<double>& ref) {
  std::vector<double> naive(ref.size());
  double norm = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    naive[i] = ops::round_half(static_cast<float>(ref[i]));
    norm += ref[i] * ref[i];
  }
  REQUIRE(std::sqrt(norm) > 0.1 * std::sqrt(static_cast<double>(ref.size())));
  return 2 * std::max(rel_l2(naive, ref), 1e-4);
}

// The median of `reps` timings of launch() on the default stream (CUDA events), after 5 warm-up runs.
template <typename F>
float median_ms(F&& launch, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t = 0;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace yolo12::test
