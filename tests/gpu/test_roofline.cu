// tests/gpu/test_roofline.cu - bench/roofline.cu: the loops really run (exact sums on all-ones operands), the
// copy kernel copies, the measured ceilings are plausible, and the floor arithmetic.
#include "catch.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "roofline.hpp"

using yolo12::bench::Roofline;

TEST_CASE("Roofline::floor_ms is the larger of bytes at the bandwidth and FLOPs at the peak", "[roofline][host]") {
  Roofline r;
  r.copy_kernel_gbs = 4000;
  r.memcpy_gbs = 4200;  // the better of the two counts
  r.mma_sync_tflops = 500;
  r.wgmma_tflops = 800;
  CHECK(r.bandwidth_gbs() == 4200);
  CHECK(r.fp16_tflops() == 800);
  CHECK(std::fabs(r.floor_ms(4.2e9, 0) - 1.0) < 1e-9);      // 4.2 GB at 4.2 TB/s
  CHECK(std::fabs(r.floor_ms(0, 8e11) - 1.0) < 1e-9);       // 0.8 TFLOP at 800 TFLOP/s
  CHECK(std::fabs(r.floor_ms(4.2e9, 1.6e12) - 2.0) < 1e-9); // the FLOPs set it
  CHECK(std::string(r.bound(4.2e9, 1.6e12)) == "flops");
  CHECK(std::string(r.bound(4.2e9, 1e9)) == "bytes");
  Roofline none;  // nothing measured: no floor rather than a division by zero
  CHECK(none.floor_ms(1e9, 1e9) == 0.0);
}

TEST_CASE("the mma.sync and wgmma loops run every MMA they count", "[roofline][gpu]") {
  const int iters = 100;
  const std::vector<float> mma = yolo12::bench::mma_sync_ones(3, iters);
  REQUIRE(mma.size() == 3u * 256u);
  std::size_t wrong = 0;
  for (float v : mma) wrong += v != 32.f * 16.f * iters;  // 8 chains x 4 accumulators, 16 per MMA
  CHECK(wrong == 0);
  int dev = 0, major = 0;
  REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess);
  const std::vector<float> wg = yolo12::bench::wgmma_ones(2, iters);
  if (major == 9) REQUIRE_FALSE(wg.empty());  // the build has sm_90a code (YOLO12_CUDA_ARCHS)
  wrong = 0;
  for (float v : wg) wrong += v != 128.f * 16.f * 4 * iters;  // 128 accumulators, 4 wgmmas per trip
  CHECK(wrong == 0);
}

TEST_CASE("the roofline copy kernel copies every 16-byte vector and nothing past them", "[roofline][gpu]") {
  for (const std::size_t n16 : {std::size_t(1), std::size_t(1000003), std::size_t(8) << 20}) {
    INFO("vectors " << n16);
    const std::size_t words = n16 * 4 + 4;  // one guard vector after the end
    std::vector<std::uint32_t> src(words), dst(words, 0xdeadbeefu);
    for (std::size_t i = 0; i < words; ++i) src[i] = static_cast<std::uint32_t>(i * 2654435761u);
    void *ds = nullptr, *dd = nullptr;
    REQUIRE(cudaMalloc(&ds, words * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&dd, words * 4) == cudaSuccess);
    REQUIRE(cudaMemcpy(ds, src.data(), words * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dd, dst.data(), words * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    yolo12::bench::copy_vectors(ds, dd, n16, nullptr);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemcpy(dst.data(), dd, words * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    cudaFree(ds);
    cudaFree(dd);
    CHECK(std::memcmp(dst.data(), src.data(), n16 * 16) == 0);
    for (std::size_t i = n16 * 4; i < words; ++i) CHECK(dst[i] == 0xdeadbeefu);
  }
}

TEST_CASE("measure_roofline gives plausible ceilings", "[roofline][gpu]") {
  yolo12::bench::RooflineOptions o;
  o.copy_bytes = std::size_t(256) << 20;  // 256 MiB: four times the H200's L2
  o.copy_reps = 3;
  o.mma_iters = 2000;
  const Roofline r = yolo12::bench::measure_roofline(nullptr, o);
  INFO(yolo12::bench::describe(r));
  CHECK(r.copy_bytes == o.copy_bytes);
  CHECK(r.copy_kernel_gbs > 100);
  CHECK(r.copy_kernel_gbs < 20000);
  CHECK(r.memcpy_gbs > 100);
  CHECK(r.mma_sync_tflops > 10);
  CHECK(r.mma_sync_tflops < 5000);
  CHECK(r.wgmma_tflops < 5000);
  CHECK(r.floor_ms(1e9, 0) > 0);
  WARN(yolo12::bench::describe(r));
}
