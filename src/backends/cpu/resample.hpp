// cpu/resample.hpp - the data-movement ops: nearest upsample, max-pool, channel-slice copy.
#pragma once

#include "backends/cpu/tensor_view.hpp"
#include "graph/ops.hpp"

namespace yolo12::cpu {

class ThreadPool;

// out[b, c, y, x] = in[b, c, y / factor, x / factor]
struct UpsampleParams : graph::UpsampleAttrs {
  TensorView in;   // (B, C, H, W)
  TensorView out;  // (B, C, H * factor, W * factor)
  int batch = 1;
};
void upsample_nearest(const UpsampleParams& p, ThreadPool& pool);

// out[b, c, y, x] = max of in[b, c, y + dy, x + dx] over |dy|, |dx| <= k / 2 inside the image
// (stride 1, padding k / 2 that never wins, as PyTorch pads with -inf). Computed separably: a
// row max then a column max, which is exact because max is associative.
struct MaxPoolParams : graph::MaxPoolAttrs {  // k odd
  TensorView in;   // (B, C, H, W)
  TensorView out;  // (B, C, H, W)
  int batch = 1;
};
void max_pool_same(const MaxPoolParams& p, ThreadPool& pool);

// out[b, c] = in[b, c] for every channel of the views (same shapes).
struct CopyParams {
  TensorView in;   // (B, C, H, W)
  TensorView out;  // (B, C, H, W)
  int batch = 1;
};
void copy_channels(const CopyParams& p, ThreadPool& pool);

}  // namespace yolo12::cpu
