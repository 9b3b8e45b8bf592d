// tools/dev/gemm_probe.cu - cuBLAS on the GEMMs of yolo12's 1x1 convs, as a measured reference for what the GPU
// reaches on those shapes (not part of the engine, which never calls cuBLAS). For each (M, N, K) it times
// C (M, N) = A (M, K) W^T (W: N x K), fp16 in and out, fp32 accumulation, all row-major as the conv's NHWC
// views are, by cublasGemmEx with the default algorithm: 5 warm-up launches, then the median of 20 runs of 5
// launches between CUDA events. No bias or activation (cuBLAS has no SiLU epilogue), so it is a lower bound
// for the conv's GEMM alone.
//   nvcc -O2 -std=c++17 -arch=sm_90a tools/dev/gemm_probe.cu -lcublas -o gemm_probe && ./gemm_probe
// Prints one line per shape: ms, TFLOP/s and the GB/s of its compulsory traffic (A, W and C once).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

#define CHECK_CUDA(x)                                                              \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

struct Shape {
  long long m;
  int n, k;
  const char* what;
};

// yolo12x and yolo12n at batch 32, 640x640: the 1x1 convs where our kernels are furthest from their floor.
const Shape kShapes[] = {
    {32LL * 160 * 160, 384, 384, "x 1x1 384->384 at 160x160"},   {32LL * 160 * 160, 192, 192, "x 1x1 192->192 at 160x160"},
    {32LL * 160 * 160, 96, 96, "x 1x1 96->96 at 160x160"},       {32LL * 80 * 80, 384, 384, "x 1x1 384->384 at 80x80"},
    {32LL * 80 * 80, 768, 768, "x 1x1 768->768 at 80x80"},       {32LL * 80 * 80, 192, 1536, "x 1x1 1536->192 at 80x80"},
    {32LL * 40 * 40, 768, 1152, "x 1x1 1152->768 at 40x40"},     {32LL * 160 * 160, 64, 48, "n 1x1 48->64 at 160x160"},
    {32LL * 80 * 80, 128, 96, "n 1x1 96->128 at 80x80"},         {32LL * 80 * 80, 32, 256, "n 1x1 256->32 at 80x80"},
    {32LL * 80 * 80, 80, 80, "n 1x1 80->80 at 80x80"},
};

__global__ void fill(__half* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    p[i] = __float2half(static_cast<float>(h % 2001) / 1000.f - 1.f);
  }
}

}  // namespace

int main() {
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 1;
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (const Shape& s : kShapes) {
    __half *a = nullptr, *w = nullptr, *c = nullptr;
    CHECK_CUDA(cudaMalloc(&a, s.m * s.k * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&w, 1LL * s.n * s.k * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&c, s.m * s.n * sizeof(__half)));
    fill<<<1024, 256>>>(a, s.m * s.k, 1u);
    fill<<<64, 256>>>(w, 1LL * s.n * s.k, 2u);
    const float alpha = 1.f, beta = 0.f;
    // Row-major C (M, N) = A (M, K) W^T is column-major C^T (N, M) = W (K x N col-major)^T A^T (K x M col-major).
    auto gemm = [&] {
      return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, s.n, static_cast<int>(s.m), s.k, &alpha, w, CUDA_R_16F, s.k, a,
                          CUDA_R_16F, s.k, &beta, c, CUDA_R_16F, s.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    bool ok = true;
    for (int i = 0; i < 5; ++i) ok = ok && gemm() == CUBLAS_STATUS_SUCCESS;
    std::vector<float> runs;
    for (int r = 0; r < 20 && ok; ++r) {
      CHECK_CUDA(cudaEventRecord(start));
      for (int i = 0; i < 5; ++i) ok = ok && gemm() == CUBLAS_STATUS_SUCCESS;
      CHECK_CUDA(cudaEventRecord(stop));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float ms = 0.f;
      CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
      runs.push_back(ms / 5);
    }
    if (!ok) {
      std::printf("%-28s cublasGemmEx failed\n", s.what);
    } else {
      std::sort(runs.begin(), runs.end());
      const double ms = runs[runs.size() / 2];
      const double flops = 2.0 * s.m * s.n * s.k;
      const double bytes = 2.0 * (s.m * s.k + 1.0 * s.n * s.k + 1.0 * s.m * s.n);
      std::printf("%-28s M %8lld N %4d K %4d  cublas %.4f ms  %6.1f TFLOP/s  %6.0f GB/s\n", s.what, s.m, s.n, s.k, ms,
                  flops / ms * 1e-9, bytes / ms * 1e-6);
    }
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(c));
  }
  cublasDestroy(handle);
  return 0;
}
