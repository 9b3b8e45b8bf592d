// tests/gpu/kernel_test_support.cuh - small pieces the kernel tests that launch kernels directly share
// (test_stem_pair.cu, test_halo_pair.cu): a conv variant switch set for a scope, a device array, and a median of CUDA
// event timings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include <cuda_runtime.h>

#include "backends/cuda/conv_detail.cuh"
#include "catch.hpp"

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
