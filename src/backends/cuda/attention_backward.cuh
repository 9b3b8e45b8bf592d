// src/backends/cuda/attention_backward.cuh - the backward pass of the area attention of attention.cuh
// for training (python/yolo12_torch), head dims dqk = dv = 32 (both YOLO12 families).
//
// Forward, per image, chunk of Nc = N / area tokens and head (attention.cuh):
//   s_ij = scale * <q_i, k_j>,  p_ij = exp(s_ij - lse_i),  o_i = sum_j p_ij v_j
// with lse_i = ln sum_j exp(s_ij) kept by the forward (AreaAttentionParams::lse). Given do = dL/do:
//   D_i   = <do_i, o_i>
//   dp_ij = <do_i, v_j>,   ds_ij = p_ij (dp_ij - D_i)
//   dq_i  = scale * sum_j ds_ij k_j,   dk_j = scale * sum_i ds_ij q_i,   dv_j = sum_i p_ij do_i
// Flash-attention style: p and ds are recomputed tile by tile from q, k and lse and never reach
// global memory. Two launches: attention_bwd_dq (one thread per query: D, then dq over the chunk's
// key tiles; also writes D for the second) and attention_bwd_dkdv (two threads per key, one for dk
// and one for dv, over the chunk's query tiles). Every gradient element has one owner, so there are
// no atomics and the result does not depend on timing.
//
// Layouts: token-major views as in attention.cuh (element (token t, head h, dim d) of q at
// q[t * ldq + h * q_head_stride + d]); out, dout and the three gradients have head stride 32.
// T = float, __half or __nv_bfloat16; all arithmetic in fp32.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "graph/ops.hpp"

namespace yolo12::cuda {

// The forward's attributes (graph::AttentionAttrs: heads, dqk, dv, q/k/v head strides, area, scale;
// dqk = dv = 32 here) and this call's views. The gradients are grad_q, grad_k, grad_v (dv is the
// attributes' value head dim).
template <typename T>
struct AreaAttentionBackwardParams : graph::AttentionAttrs {
  const T* q = nullptr;         // (B, N, ldq), head h dim d at h * q_head_stride + d
  const T* k = nullptr;         // (B, N, ldk)
  const T* v = nullptr;         // (B, N, ldv)
  int ldq = 0, ldk = 0, ldv = 0;
  const T* out = nullptr;       // (B, N, ldo): the forward output, head h at h * 32
  int ldo = 0;
  const T* dout = nullptr;      // (B, N, lddo): its gradient, head h at h * 32
  int lddo = 0;
  const float* lse = nullptr;   // (B, heads, N) from the forward
  float* delta = nullptr;       // workspace (B, heads, N)
  T* grad_q = nullptr;          // (B, N, ldgq), head h at h * 32
  T* grad_k = nullptr;          // (B, N, ldgk), head h at h * 32
  T* grad_v = nullptr;          // (B, N, ldgv), head h at h * 32
  int ldgq = 0, ldgk = 0, ldgv = 0;
  int batch = 1, tokens = 0;
};

// Throws yolo12::InputError for shapes the forward rejects (area_attention_can_implement), for dqk
// or dv other than 32, and for null pointers or strides too small for the heads.
template <typename T>
void area_attention_backward(const AreaAttentionBackwardParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
