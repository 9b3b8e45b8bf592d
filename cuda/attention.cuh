// cuda/attention.cuh - fused area attention (A2C2f AAttn, turbo AAttn, PSA Attention).
//
// Tokens are the H*W positions of an image in row-major order, cut into `area` contiguous chunks of
// tokens_per_area = H*W / area tokens (not always whole rows). Inside each chunk and per head:
//   out[t, h*dv + d] = sum_j softmax_j(scale * <q[t,h,:], k[j,h,:]>) * v[j, h, d]
// The score matrix never reaches global memory (online softmax over key tiles).
// Query channel for (head h, dim d) of token t: q[t * ldq + h * q_head_stride + d]; likewise k, v.
// Optionally v is also written back as an image: v_image[t * ldvi + h * dv + d] (input of the pe conv).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace yolo12::cuda {

template <typename T>  // float or __half; softmax and accumulation in fp32
struct AreaAttentionParams {
  const T* q = nullptr;  // (B, N, ldq) token-major view (NHWC with N = H*W)
  const T* k = nullptr;  // (B, N, ldk)
  const T* v = nullptr;  // (B, N, ldv)
  int ldq = 0, ldk = 0, ldv = 0;
  int q_head_stride = 0, k_head_stride = 0, v_head_stride = 0;
  T* out = nullptr;      // (B, N, ldo), heads * dv channels written
  int ldo = 0;
  T* v_image = nullptr;  // optional (B, N, ldvi), heads * dv channels written
  int ldvi = 0;
  int batch = 1, tokens = 0, area = 1, heads = 1;
  int dqk = 32, dv = 32;
  float scale = 0.f;
};

bool area_attention_can_implement(int tokens, int area, int heads, int dqk, int dv);
template <typename T>
void area_attention_forward(const AreaAttentionParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
