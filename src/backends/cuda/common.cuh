// src/backends/cuda/common.cuh - error checking and small helpers shared by every CUDA file.
//
// YOLO12_CUDA_CHECK(call) turns a failing CUDA runtime call into a yolo12::CudaError carrying the
// call, file:line, device and cudaGetErrorString. YOLO12_CUDA_CHECK_LAUNCH() checks the last launch.
// DeviceBuffer / PinnedBuffer own one cudaMalloc / cudaMallocHost allocation (moved, never copied);
// they are only ever created while a model is loaded or a plan is made, never inside an inference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/env.hpp"
#include "yolo12/errors.hpp"

namespace yolo12::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const std::string& call, const char* file, int line) {
  int dev = -1;
  cudaGetDevice(&dev);
  throw CudaError("CUDA error: " + call + " failed at " + file + ":" + std::to_string(line) +
                  " on device " + std::to_string(dev) + ": " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// env_switch and env_count (core/env.hpp) read the YOLO12_* settings.

// What the kernels' launch choices depend on, for the current device (cudaGetDevice: the device the
// caller's kernels run on), queried once per device ordinal and kept (device.cu). The one place device
// facts come from: no kernel hard-codes an SM count or a shared-memory size. The defaults are the
// H200's, which device_info() returns (uncached) where no device answers, e.g. on a machine without a
// GPU, where the tests replay kernel plans and pieces on the CPU.
struct DeviceInfo {
  int sm_count = 132;                          // multiprocessors
  std::size_t smem_per_block_optin = 232448;   // bytes of dynamic shared memory one block may opt in to (227 KiB)
  std::size_t smem_per_sm = 233472;            // bytes per multiprocessor (228 KiB)
  std::size_t smem_reserved_per_block = 1024;  // bytes the system reserves per block
  int cc_major = 9, cc_minor = 0;              // compute capability
};
const DeviceInfo& device_info();

// Raises `kernel`'s dynamic shared-memory limit to at least `bytes` on the current device. The
// attribute belongs to the kernel's instance on one device, so it is set once per (kernel, device),
// and again only for a larger size; thread-safe; not a stream operation (legal during graph capture).
cudaError_t allow_dynamic_smem(const void* kernel, int bytes);
inline std::size_t align_up(std::size_t a, std::size_t b) { return (a + b - 1) / b * b; }

// One CUDA allocation owned by a handle: Alloc/Free are cudaMalloc/cudaFree (device memory) or
// cudaMallocHost/cudaFreeHost (page-locked host memory). Freed in the destructor (errors there are
// ignored: nothing to report to).
template <cudaError_t (*Alloc)(void**, std::size_t), cudaError_t (*Free)(void*)>
class CudaAllocation {
 public:
  CudaAllocation() = default;
  explicit CudaAllocation(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) {
      cudaError_t err = Alloc(&ptr_, bytes_);
      if (err != cudaSuccess) throw_cuda_error(err, "allocation of " + std::to_string(bytes_) + " bytes", __FILE__, __LINE__);
    }
  }
  ~CudaAllocation() { if (ptr_) Free(ptr_); }
  CudaAllocation(CudaAllocation&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaAllocation& operator=(CudaAllocation&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  CudaAllocation(const CudaAllocation&) = delete;
  CudaAllocation& operator=(const CudaAllocation&) = delete;
  void* get() const { return ptr_; }
  template <typename T> T* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(ptr_) + byte_offset);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

inline cudaError_t device_malloc(void** p, std::size_t n) { return cudaMalloc(p, n); }
inline cudaError_t pinned_malloc(void** p, std::size_t n) { return cudaMallocHost(p, n); }
inline cudaError_t device_free(void* p) { return cudaFree(p); }
inline cudaError_t pinned_free(void* p) { return cudaFreeHost(p); }

using DeviceBuffer = CudaAllocation<device_malloc, device_free>;  // device memory
using PinnedBuffer = CudaAllocation<pinned_malloc, pinned_free>;  // page-locked host staging

#ifdef __CUDACC__
// fp32 <-> storage type conversions usable in templated kernels.
template <typename T> __device__ __forceinline__ float to_f32(T v);
template <> __device__ __forceinline__ float to_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f32<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
#endif

}  // namespace yolo12::cuda

#define YOLO12_CUDA_CHECK(call)                                                   \
  do {                                                                            \
    cudaError_t yolo12_err_ = (call);                                             \
    if (yolo12_err_ != cudaSuccess)                                               \
      ::yolo12::cuda::throw_cuda_error(yolo12_err_, #call, __FILE__, __LINE__);   \
  } while (0)

#define YOLO12_CUDA_CHECK_LAUNCH() YOLO12_CUDA_CHECK(cudaGetLastError())

namespace yolo12::cuda {

// Captures what `enqueue` puts on `stream` into a new graph. If enqueue throws, the capture is ended
// and its graph dropped before the exception goes on.
template <typename F>
cudaGraph_t capture_graph(cudaStream_t stream, F&& enqueue) {
  YOLO12_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream, &broken);
    if (broken) cudaGraphDestroy(broken);
    throw;
  }
  cudaGraph_t graph = nullptr;
  YOLO12_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  return graph;
}

}  // namespace yolo12::cuda
