// src/backends/cuda/attention.cuh - fused area attention (A2C2f AAttn, turbo AAttn, PSA Attention).
//
// Tokens are the H*W positions of an image in row-major order, cut into `area` contiguous chunks of
// tokens_per_area = H*W / area tokens (not always whole rows). Inside each chunk and per head:
//   out[t, h*dv + d] = sum_j softmax_j(scale * <q[t,h,:], k[j,h,:]>) * v[j, h, d]
// The score matrix never reaches global memory (online softmax over key tiles).
// Query channel for (head h, dim d) of token t: q[t * ldq + h * q_head_stride + d]; likewise k, v.
// Optionally v is also written back as an image: v_image[t * ldvi + h * dv + d] (input of the pe conv).
//
// The three layouts, as views of the 1x1 conv outputs (NHWC, C = heads * 32):
//   YOLO12 AAttn:  qkv (B, N, 3C): q = qkv, k = qkv + 32, v = qkv + 64, head strides 96, dqk = dv = 32
//   turbo AAttn:   qk (B, N, 2C) and v (B, N, C): all heads' q first, then all k: q = qk, k = qk + C,
//                  head strides 32; v = v, head stride 32 (sunsmarterjie/yolov12 AAttn splits qk [C, C])
//   YOLO11 PSA:    qkv (B, N, 2C): q = qkv, k = qkv + 32, v = qkv + 64, head strides 128, dqk 32, dv 64
//
// Kernels (src/backends/cuda/attention.cu): area_attention_flash_f16 (tensor cores, fp16 with 16-byte aligned
// views, scale > 0), area_attention_flash_f16_split (the same maths with a chunk's keys split across
// warps, for grids too small to fill the GPU, e.g. batch 1) and area_attention_rowwise (CUDA cores,
// fp32 or fp16, any alignment; the oracle). area_attention_forward picks one (area_attention_select).
// Launches never allocate or synchronise (the split kernel raises its shared-memory limit once per
// device with allow_dynamic_smem, which is no stream operation).
// Optionally each kernel also keeps the softmax statistics, lse[b, h, t] = ln sum_j exp(scale *
// <q[t,h,:], k[j,h,:]>) over the chunk of token t, for a backward pass (python/yolo12_torch).
// bf16 runs on the rowwise kernel only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "graph/ops.hpp"

namespace yolo12::cuda {

// The graph op's attributes (heads, dqk, dv, q/k/v head strides, area, scale) and this call's views.
template <typename T>  // float, __half or __nv_bfloat16; softmax and accumulation in fp32
struct AreaAttentionParams : graph::AttentionAttrs {
  const T* q = nullptr;  // (B, N, ldq) token-major view (NHWC with N = H*W)
  const T* k = nullptr;  // (B, N, ldk)
  const T* v = nullptr;  // (B, N, ldv)
  int ldq = 0, ldk = 0, ldv = 0;
  T* out = nullptr;      // (B, N, ldo), heads * dv channels written
  int ldo = 0;
  T* v_image = nullptr;  // optional (B, N, ldvi), heads * dv channels written
  int ldvi = 0;
  float* lse = nullptr;  // optional (B, heads, N) fp32: the softmax statistics (see above)
  int batch = 1, tokens = 0;
};

// Shape check for graph-build time: tokens % area == 0, dqk == 32, dv 32 or 64.
bool area_attention_can_implement(int tokens, int area, int heads, int dqk, int dv);
// Throws yolo12::InputError for parameters area_attention_can_implement rejects or inconsistent
// views (null pointers, ld smaller than the channels used, batch * area > 65535).
template <typename T>
void area_attention_forward(const AreaAttentionParams<T>& p, cudaStream_t stream);

// Which kernel area_attention_forward runs for these parameters (for tests, logs and benchmarks).
enum class AreaAttentionKernel { rowwise, flash_f16, flash_f16_split };
template <typename T>
AreaAttentionKernel area_attention_select(const AreaAttentionParams<T>& p);
const char* area_attention_kernel_name(AreaAttentionKernel k);
// The simple kernel, whatever the alignment: the oracle the tests compare the tensor-core path with.
template <typename T>
void area_attention_forward_rowwise(const AreaAttentionParams<T>& p, cudaStream_t stream);
// A given kernel (tests, benchmarks); throws yolo12::InputError if it cannot run these parameters.
template <typename T>
void area_attention_forward_with(const AreaAttentionParams<T>& p, AreaAttentionKernel kernel, cudaStream_t stream);

}  // namespace yolo12::cuda
