// cuda/common.cuh - error checking and small helpers shared by every CUDA file.
//
// YOLO12_CUDA_CHECK(call) turns a failing CUDA runtime call into a yolo12::CudaError carrying the
// call, file:line, device and cudaGetErrorString. YOLO12_CUDA_CHECK_LAUNCH() checks the last launch.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "yolo12/errors.hpp"

namespace yolo12::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  int dev = -1;
  cudaGetDevice(&dev);
  throw CudaError(std::string("CUDA error: ") + call + " failed at " + file + ":" + std::to_string(line) +
                  " on device " + std::to_string(dev) + ": " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace yolo12::cuda

#define YOLO12_CUDA_CHECK(call)                                                   \
  do {                                                                            \
    cudaError_t yolo12_err_ = (call);                                             \
    if (yolo12_err_ != cudaSuccess)                                               \
      ::yolo12::cuda::throw_cuda_error(yolo12_err_, #call, __FILE__, __LINE__);   \
  } while (0)

#define YOLO12_CUDA_CHECK_LAUNCH() YOLO12_CUDA_CHECK(cudaGetLastError())
