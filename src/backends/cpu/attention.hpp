// cpu/attention.hpp - area attention (YOLO12 AAttn, turbo AAttn, YOLO11 PSA Attention) on the CPU.
//
// Per image, the H*W tokens (row-major) are cut into `area` contiguous chunks of n = H*W / area
// tokens (a chunk need not be whole rows). Inside each chunk and for each head h:
//   s_ij   = scale * sum_{d < dqk} q[h, d, i] * k[h, d, j]
//   p_ij   = softmax_j(s_ij)                      (max subtracted first)
//   out[h * dv + d, i] = sum_j p_ij * v[h, d, j]  (d < dv)
// where q[h, d, t] is channel q_c0 + h * q_head_stride + d of the q view at token t (likewise k, v).
// If v_image is given, v[h, d, t] is also written there as channel h * dv + d (the pe conv's input).
// If lse is given, the softmax statistics ln sum_j exp(s_ij) of every query are written there too
// (index (b * heads + h) * H*W + token), for a backward pass (python/yolo12_torch).
// One task per (image, chunk, head); queries go in blocks of 48 so the score block stays in cache,
// and both products (q.k and p.v) run on the GEMM register-tile kernel (gemm_tile.hpp).
#pragma once

#include "backends/cpu/tensor_view.hpp"
#include "graph/ops.hpp"

namespace yolo12::cpu {

class ThreadPool;

// The graph op's attributes (heads, dqk, dv, head strides, area, scale) and this call's views.
struct AttentionParams : graph::AttentionAttrs {
  TensorView q;         // (B, *, H, W): head h, dim d at view channel h * q_head_stride + d
  TensorView k;         // (B, *, H, W): likewise with k_head_stride
  TensorView v;         // (B, *, H, W): likewise with v_head_stride
  TensorView out;       // (B, heads * dv, H, W)
  TensorView v_image;   // optional (B, heads * dv, H, W)
  float* lse = nullptr; // optional (B, heads, H*W)
  int batch = 1;
};

// Throws yolo12::InputError if H*W is not divisible by area or a view is too small.
void area_attention(const AttentionParams& p, ThreadPool& pool);

}  // namespace yolo12::cpu
