// bench/roofline.cu - see roofline.hpp. Our own kernels: a 16-byte grid-stride copy, an mma.sync loop and a
// wgmma loop (sm_90a only), none of which touches device memory inside its timed loop.
#include "roofline.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <cuda_fp16.h>

#include "backends/cuda/common.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/wgmma.cuh"

namespace yolo12::bench {
namespace {

using cuda::DeviceBuffer;
using cuda::device_info;

// ---- copy ---------------------------------------------------------------------------------------------------

constexpr int kCopyThreads = 256;

// dst[i] = src[i] for n 16-byte vectors, grid-stride with four loads in flight per thread.
__global__ void __launch_bounds__(kCopyThreads) roofline_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                                              std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride], v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

void launch_copy(const void* src, void* dst, std::size_t n16, cudaStream_t stream) {
  const long long blocks = std::min<long long>(8LL * device_info().sm_count, static_cast<long long>((n16 + kCopyThreads - 1) / kCopyThreads));
  if (blocks < 1) return;
  roofline_copy<<<static_cast<int>(blocks), kCopyThreads, 0, stream>>>(static_cast<const uint4*>(src),
                                                                        static_cast<uint4*>(dst), n16);
  YOLO12_CUDA_CHECK_LAUNCH();
}

// The shortest time of `reps` runs of enqueue on stream, in ms (one untimed run first).
template <typename F>
double best_ms(cudaStream_t stream, int reps, F&& enqueue) {
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  YOLO12_CUDA_CHECK(cudaEventCreate(&e0));
  YOLO12_CUDA_CHECK(cudaEventCreate(&e1));
  struct Release {
    cudaEvent_t a, b;
    ~Release() {
      cudaEventDestroy(a);
      cudaEventDestroy(b);
    }
  } release{e0, e1};
  enqueue();
  YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    YOLO12_CUDA_CHECK(cudaEventRecord(e0, stream));
    enqueue();
    YOLO12_CUDA_CHECK(cudaEventRecord(e1, stream));
    YOLO12_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    YOLO12_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, static_cast<double>(ms));
  }
  return best;
}

// ---- mma.sync ---------------------------------------------------------------------------------------------

constexpr int kMmaThreads = 256;  // 8 warps
constexpr int kMmaChains = 8;     // independent accumulators per warp, enough to cover the MMA latency

__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

// ones: every operand 1.0 (each accumulator gains 16 per MMA); else small varied values, exact in fp16.
__global__ void __launch_bounds__(kMmaThreads) roofline_mma_sync(int iters, int ones, float* out) {
  const int lane = threadIdx.x % 32;
  std::uint32_t a[4], b[2];
#pragma unroll
  for (int r = 0; r < 4; ++r)
    a[r] = ones ? pack_half2(1.f, 1.f) : pack_half2(((lane * 7 + r) % 15 - 7) * 0.125f, ((lane * 3 + r) % 11 - 5) * 0.125f);
#pragma unroll
  for (int r = 0; r < 2; ++r)
    b[r] = ones ? pack_half2(1.f, 1.f) : pack_half2(((lane * 5 + r) % 13 - 6) * 0.0625f, ((lane + r) % 9 - 4) * 0.0625f);
  float acc[kMmaChains][4];
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[c][e] = 0.f;
  for (int it = 0; it < iters; ++it)
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) cuda::conv_detail::mma_16816(acc[c], a, b[0], b[1]);
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) sum += acc[c][e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

constexpr double kMmaSyncFlops = 2.0 * 16 * 8 * 16;  // one m16n8k16

// ---- wgmma (sm_90a) ---------------------------------------------------------------------------------------

constexpr int kWgThreads = 256;             // two warpgroups
constexpr int kWgAHalves = 64 * 16;         // one warpgroup's A, 64 x 16 (2 KiB)
constexpr int kWgBHalves = 256 * 16;        // B, 16 x 256 (8 KiB), shared by both
constexpr int kWgSmemHalves = 2 * kWgAHalves + kWgBHalves;
static_assert(kWgSmemHalves * 2 <= 48 * 1024, "the wgmma loop's operands fit in static shared memory");
constexpr int kWgPerTrip = 4;               // wgmmas per loop trip (one commit group)
constexpr double kWgmmaFlops = 2.0 * 64 * 256 * 16;  // one m64n256k16

#if defined(YOLO12_HAS_WGMMA)  // backends/cuda/wgmma.cuh: the wgmma wrappers, sm_90a code only
// A shared-memory matrix descriptor without swizzle: start address, leading-dimension byte offset 128 (the
// next 8x8 core matrix along K), stride byte offset 256 (the next one along M or N); each core matrix is
// 8 rows of 16 bytes. A (64 x 16) then spans 8 x 256 bytes, B (256 x 16) 32 x 256 bytes.
__device__ __forceinline__ std::uint64_t smem_desc(const void* p) {
  const std::uint64_t addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  return ((addr & 0x3FFFF) >> 4) | (std::uint64_t(128 >> 4) << 16) | (std::uint64_t(256 >> 4) << 32);
}

#endif

// One block of two warpgroups per SM; ones as for roofline_mma_sync (each accumulator gains 16 per wgmma).
// Without sm_90a code every thread writes -1 (not available).
__global__ void __launch_bounds__(kWgThreads, 1) roofline_wgmma(int iters, int ones, float* out) {
#if defined(YOLO12_HAS_WGMMA)
  __shared__ __align__(128) __half sm[kWgSmemHalves];  // [A of warpgroup 0 | A of warpgroup 1 | B]
  for (int i = threadIdx.x; i < kWgSmemHalves; i += kWgThreads)
    sm[i] = __float2half_rn(ones ? 1.f : ((i * 7) % 17 - 8) * 0.0625f);
  cuda::fence_proxy_async();  // ordinary stores, read by the tensor cores (the async proxy)
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const std::uint64_t desc_a = smem_desc(sm + wg * kWgAHalves), desc_b = smem_desc(sm + 2 * kWgAHalves);
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  cuda::wgmma_fence_accumulators(d);
  cuda::wgmma_fence();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < kWgPerTrip; ++k) cuda::wgmma_m64k16<256>(d, desc_a, desc_b);
    cuda::wgmma_commit();
    cuda::wgmma_wait<1>();  // one group in flight behind the next
  }
  cuda::wgmma_wait<0>();
  cuda::wgmma_fence_accumulators(d);
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) sum += d[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
#else
  (void)iters;
  (void)ones;
  out[blockIdx.x * blockDim.x + threadIdx.x] = -1.f;
#endif
}

std::vector<float> run_loop(void (*kernel)(int, int, float*), int blocks, int threads, int iters, int ones) {
  DeviceBuffer out(sizeof(float) * blocks * threads);
  kernel<<<blocks, threads>>>(iters, ones, out.as<float>());
  YOLO12_CUDA_CHECK_LAUNCH();
  std::vector<float> host(static_cast<std::size_t>(blocks) * threads);
  YOLO12_CUDA_CHECK(cudaMemcpy(host.data(), out.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace

double Roofline::floor_ms(double bytes, double flops) const {
  const double t_bytes = bandwidth_gbs() > 0 ? bytes / (bandwidth_gbs() * 1e9) : 0.0;
  const double t_flops = fp16_tflops() > 0 ? flops / (fp16_tflops() * 1e12) : 0.0;
  return 1e3 * std::max(t_bytes, t_flops);
}

const char* Roofline::bound(double bytes, double flops) const {
  const double t_bytes = bandwidth_gbs() > 0 ? bytes / bandwidth_gbs() : 0.0;
  const double t_flops = fp16_tflops() > 0 ? flops / (fp16_tflops() * 1e3) : 0.0;
  return t_flops > t_bytes ? "flops" : "bytes";
}

std::vector<float> mma_sync_ones(int blocks, int iters) {
  return run_loop(roofline_mma_sync, blocks, kMmaThreads, iters, 1);
}

std::vector<float> wgmma_ones(int blocks, int iters) {
  std::vector<float> v = run_loop(roofline_wgmma, blocks, kWgThreads, iters, 1);
  if (!v.empty() && v[0] == -1.f) v.clear();
  return v;
}

void copy_vectors(const void* src, void* dst, std::size_t n16, cudaStream_t stream) { launch_copy(src, dst, n16, stream); }

Roofline measure_roofline(cudaStream_t stream, const RooflineOptions& o) {
  Roofline r;
  const int sms = device_info().sm_count;
  // Copy: the largest buffers (up to copy_bytes each) that the device will give.
  std::size_t bytes = o.copy_bytes / 16 * 16;
  DeviceBuffer src, dst;
  while (bytes >= (std::size_t(1) << 24)) {
    try {
      src = DeviceBuffer(bytes);
      dst = DeviceBuffer(bytes);
      break;
    } catch (const CudaError&) {
      (void)cudaGetLastError();  // out of memory is not sticky: clear it and try half
      src = DeviceBuffer();
      dst = DeviceBuffer();
      bytes /= 2;
    }
  }
  if (!src.get()) throw CudaError("roofline: could not allocate two copy buffers of 16 MiB");
  YOLO12_CUDA_CHECK(cudaMemsetAsync(src.get(), 0x5a, bytes, stream));
  r.copy_bytes = bytes;
  const double moved = 2.0 * static_cast<double>(bytes);  // read + written
  const double t_kernel = best_ms(stream, o.copy_reps, [&] { launch_copy(src.get(), dst.get(), bytes / 16, stream); });
  const double t_memcpy = best_ms(stream, o.copy_reps, [&] {
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
  });
  r.copy_kernel_gbs = moved / (t_kernel * 1e-3) / 1e9;
  r.memcpy_gbs = moved / (t_memcpy * 1e-3) / 1e9;

  // mma.sync: 4 blocks of 8 warps per SM.
  {
    const int blocks = 4 * sms;
    DeviceBuffer out(sizeof(float) * blocks * kMmaThreads);
    const double t = best_ms(stream, 3, [&] {
      roofline_mma_sync<<<blocks, kMmaThreads, 0, stream>>>(o.mma_iters, 0, out.as<float>());
      YOLO12_CUDA_CHECK_LAUNCH();
    });
    const double flops = kMmaSyncFlops * kMmaChains * o.mma_iters * (blocks * (kMmaThreads / 32.0));
    r.mma_sync_tflops = flops / (t * 1e-3) / 1e12;
  }
  // wgmma: one block of two warpgroups per SM, where the build has it.
  if (o.wgmma && !wgmma_ones(1, 1).empty()) {
    const int blocks = sms;
    DeviceBuffer out(sizeof(float) * blocks * kWgThreads);
    const double t = best_ms(stream, 3, [&] {
      roofline_wgmma<<<blocks, kWgThreads, 0, stream>>>(o.mma_iters, 0, out.as<float>());
      YOLO12_CUDA_CHECK_LAUNCH();
    });
    const double flops = kWgmmaFlops * kWgPerTrip * o.mma_iters * (blocks * (kWgThreads / 128.0));
    r.wgmma_tflops = flops / (t * 1e-3) / 1e12;
  }
  return r;
}

std::string describe(const Roofline& r) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "roofline: copy %.0f GB/s (copy kernel %.0f, cudaMemcpy %.0f; read + written, %.0f MiB buffers), "
                "fp16 tensor cores %.0f TFLOP/s (wgmma %.0f, mma.sync %.0f)",
                r.bandwidth_gbs(), r.copy_kernel_gbs, r.memcpy_gbs, r.copy_bytes / 1048576.0, r.fp16_tflops(),
                r.wgmma_tflops, r.mma_sync_tflops);
  return buf;
}

void print_op_roofline(std::FILE* out, const Roofline& roof, const std::string& title, const std::vector<OpCost>& ops,
                       int top) {
  double t_sum = 0, f_sum = 0, f_bytes = 0;
  std::vector<double> floors(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    floors[i] = roof.floor_ms(ops[i].bytes, ops[i].flops);
    t_sum += ops[i].ms;
    f_sum += floors[i];
    if (std::string(roof.bound(ops[i].bytes, ops[i].flops)) == "bytes") f_bytes += floors[i];
  }
  std::fprintf(out, "roofline %s: %zu ops, sum of medians %.3f ms, sum of floors %.3f ms (%.3f ms of it bytes), %.1fx\n",
               title.c_str(), ops.size(), t_sum, f_sum, f_bytes, f_sum > 0 ? t_sum / f_sum : 0.0);
  std::vector<std::size_t> order(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return ops[a].ms - floors[a] > ops[b].ms - floors[b]; });
  for (std::size_t r = 0; r < order.size() && static_cast<int>(r) < top; ++r) {
    const std::size_t i = order[r];
    std::fprintf(out, "  op %3zu %8.4f ms  floor %8.4f ms (%s) %6.1fx  gap %8.4f ms  %s\n", i, ops[i].ms, floors[i],
                 roof.bound(ops[i].bytes, ops[i].flops), floors[i] > 0 ? ops[i].ms / floors[i] : 0.0,
                 ops[i].ms - floors[i], ops[i].label.c_str());
  }
}

}  // namespace yolo12::bench
