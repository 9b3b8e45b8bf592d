// src/backends/cuda/launch.cuh - the network kernels' launch, with programmatic dependent launch (PDL).
//
// With PDL (compute capability 9.0 and up) a kernel may be launched while the kernel before it in
// its stream is still running down: its blocks are scheduled as soon as every block of the earlier
// kernel has exited, before that kernel's end is processed, and wait at pdl_begin() until the earlier
// kernel has finished and its writes are visible. That hides most of the launch gap between the
// kernels of a chain of small ones (batch 1). In a CUDA graph captured from such launches the edges
// become programmatic edges.
//
// The rule that keeps this correct: a kernel launched by launch_kernel() calls pdl_begin() before
// it reads or writes any activation (tests/python/test_pdl_begin.py checks the sources for it). pdl_begin() only
// waits; no kernel signals its dependents early (griddepcontrol.launch_dependents), so they launch when its last
// block exits.
//
// On by default since the thirty-seventh session; YOLO12_CUDA_PDL=0 turns it off. History: with the
// signal at the top of every kernel (each kernel let the next launch as soon as its own blocks had
// started) the next kernel's blocks took SM slots to wait in, and PDL was slower: on the H200 0.3-2.4 %
// in seven of eight cases (fifth session), and yolo12n at batch 1 0.500 -> 0.578 ms (twelfth
// session). Without the signal (H100, thirty-seventh session, docs/benchmarks-gpu.md): yolo12n
// 0.440 -> 0.422 ms at batch 1 and 2.360 -> 2.346 at batch 32, m and l -2.2 to -2.4 % at batch 1,
// s -0.8 %, every scale faster at batch 32 by 0.2-0.6 %.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "common.cuh"

namespace yolo12::cuda {

__device__ __forceinline__ void pdl_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Launches on this thread go without the attribute while a PdlOff is alive (the per-op profiler,
// which puts an event between every two kernels).
inline thread_local int pdl_off_depth = 0;
struct PdlOff {
  PdlOff() { ++pdl_off_depth; }
  ~PdlOff() { --pdl_off_depth; }
  PdlOff(const PdlOff&) = delete;
  PdlOff& operator=(const PdlOff&) = delete;
};

inline bool pdl_enabled() {
  static const bool env_on = [] {  // on unless YOLO12_CUDA_PDL=0
    const char* env = std::getenv("YOLO12_CUDA_PDL");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  return env_on && pdl_off_depth == 0 && device_info().cc_major >= 9;
}

// kernel<<<grid, block, smem, stream>>>(params), with the PDL attribute where pdl_enabled().
template <typename P>
void launch_kernel(void (*kernel)(P), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream, const P& params) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  YOLO12_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, params));
}

// The grid of a persistent kernel (its blocks walk tiles t, t + grid, ...): as many blocks of `threads` threads
// with `smem` bytes of dynamic shared memory as are resident on the device at once (at least one per SM), at
// most one per tile, and at most max_grid where that is > 0 (the tests cap it so that each block walks many
// tiles). conv2d_narrow_f16, conv2d_halo_f16, conv2d_stem_f16 and conv2d_stem_mma launch with it.
template <typename P>
int persistent_grid(void (*kernel)(P), int threads, int smem, long long tiles, int max_grid = 0) {
  int per_sm = 0;
  YOLO12_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  long long fit = 1LL * (per_sm > 0 ? per_sm : 1) * device_info().sm_count;
  if (max_grid > 0 && max_grid < fit) fit = max_grid;
  return static_cast<int>(tiles < fit ? tiles : fit);
}

// Launches one kernel instantiation with `smem` bytes of dynamic shared memory, in clusters of
// (cluster_x, 1, 1) blocks when cluster_x > 1. Above 48 KiB a kernel must opt in; that is done once per
// kernel and device (allow_dynamic_smem) and is not a stream operation, so it is legal during graph
// capture.
template <auto kKernel, typename Args>
void launch_with_smem(dim3 grid, dim3 block, int smem, const Args& a, cudaStream_t stream, int cluster_x = 1) {
  YOLO12_CUDA_CHECK(allow_dynamic_smem(reinterpret_cast<const void*>(kKernel), smem));
  if (cluster_x == 1) {
    launch_kernel(kKernel, grid, block, static_cast<std::size_t>(smem), stream, a);
    return;
  }
  // A cluster launch (split-K) keeps the plain stream order: no PDL attribute beside the cluster's.
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = static_cast<unsigned>(cluster_x);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = static_cast<std::size_t>(smem);
  config.stream = stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  YOLO12_CUDA_CHECK(cudaLaunchKernelEx(&config, kKernel, a));
}

}  // namespace yolo12::cuda
