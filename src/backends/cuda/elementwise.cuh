// src/backends/cuda/elementwise.cuh - the graph's memory-bound ops on NHWC views, fp32 or fp16:
//   upsample_nearest  y[n, y, x, c] = x[n, y / f, x / f, c]
//   max_pool_same     y[n, y, x, c] = max over the k x k window centred on (y, x), stride 1, pad k/2;
//                     padding never wins (only real pixels are compared)
//   copy_channels     y[n, p, c] = x[n, p, c] for a slice of channels (a value living in two concats)
//   nchw_to_nhwc      the float32 NCHW network input of forward_raw -> the NHWC input value (cast)
//
// A view is (ptr, ld): element (n, y, x, c) is ptr[((n * H + y) * W + x) * ld + c]; ptr already points
// at the slice's first channel, ld is the buffer's total channel count. Nothing is allocated and
// nothing synchronises: every launcher only enqueues on `stream` (safe inside CUDA graph capture).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "graph/ops.hpp"

namespace yolo12::cuda {

template <typename T>
struct UpsampleNearestParams : graph::UpsampleAttrs {  // factor
  const T* x = nullptr;  // (B, H, W, ldx) view, c channels used
  int ldx = 0;
  T* y = nullptr;        // (B, H * factor, W * factor, ldy) view
  int ldy = 0;
  int batch = 1, h = 0, w = 0, c = 0;
};

template <typename T>
struct MaxPoolParams : graph::MaxPoolAttrs {  // k: odd, stride 1, pad k / 2
  const T* x = nullptr;  // (B, H, W, ldx) view
  int ldx = 0;
  T* y = nullptr;        // (B, H, W, ldy) view
  int ldy = 0;
  int batch = 1, h = 0, w = 0, c = 0;
};

template <typename T>
struct CopyChannelsParams {
  const T* x = nullptr;  // (B, P, ldx) view, P = H * W pixels
  int ldx = 0;
  T* y = nullptr;        // (B, P, ldy) view
  int ldy = 0;
  int batch = 1, pixels = 0, c = 0;
};

template <typename T>
struct NchwToNhwcParams {
  const float* x = nullptr;  // (B, C, H, W) float32, dense
  T* y = nullptr;            // (B, H, W, ldy) view
  int ldy = 0;
  int batch = 1, c = 3, h = 0, w = 0;
};

bool max_pool_can_implement(int k);

template <typename T>
void upsample_nearest(const UpsampleNearestParams<T>& p, cudaStream_t stream);
template <typename T>
void max_pool_same(const MaxPoolParams<T>& p, cudaStream_t stream);
template <typename T>
void copy_channels(const CopyChannelsParams<T>& p, cudaStream_t stream);
template <typename T>
void nchw_to_nhwc(const NchwToNhwcParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
