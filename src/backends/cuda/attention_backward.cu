// src/backends/cuda/attention_backward.cu - see attention_backward.cuh for the maths and layouts.
//
// Grid of both kernels: x = tile inside the chunk, y = head, z = image * area + chunk.
//   attention_bwd_dq:   128 queries per block, one per thread; q (pre-scaled by scale * log2 e), do
//       and dq (32 each) in registers; key tiles of 32 tokens (k and v as fp32) in shared memory.
//       Per (query, key): 96 FMAs and one exp2.
//   attention_bwd_dkdv: 64 keys per block, two threads per key: the even lane holds k_j and dk_j,
//       the odd lane v_j and dv_j. Per query of a shared-memory tile of 32 (q, do, lse, D as fp32)
//       the even lane computes <q_i, k_j>, the odd lane <do_i, v_j>, one shuffle swaps them, and each
//       lane adds ds_ij q_i or p_ij do_i to its accumulator: 64 FMAs per lane.
// CUDA cores in fp32 (version 1). The tensor-core version (mma.sync m16n8k16 for S, dP, dQ, dK, dV
// with the chunk's K/V tiles in shared memory) is the next step; this one is its oracle.
#include "attention_backward.cuh"

#include <string>

#include "attention.cuh"
#include "common.cuh"
#include "yolo12/errors.hpp"

namespace yolo12::cuda {
namespace {

constexpr int kD = 32;             // head dim (dqk = dv)
constexpr int kDqQueries = 128;    // attention_bwd_dq: threads = queries per block
constexpr int kDqKeys = 32;        // its key tile
constexpr int kKvKeys = 64;        // attention_bwd_dkdv: keys per block (two threads each)
constexpr int kKvQueries = 32;     // its query tile
constexpr float kLog2e = 1.4426950408889634f;

template <typename T>
__global__ void __launch_bounds__(kDqQueries) attention_bwd_dq(const AreaAttentionBackwardParams<T> p) {
  __shared__ float k_tile[kDqKeys][kD];  // (keys, d), zero past the chunk
  __shared__ float v_tile[kDqKeys][kD];
  const int chunk = p.tokens / p.area;
  const int h = blockIdx.y, b = blockIdx.z / p.area, c = blockIdx.z % p.area;
  const long long tok0 = static_cast<long long>(b) * p.tokens + static_cast<long long>(c) * chunk;  // first row
  const T* k = p.k + tok0 * p.ldk + static_cast<long long>(h) * p.k_head_stride;  // (Nc, ldk) head h
  const T* v = p.v + tok0 * p.ldv + static_cast<long long>(h) * p.v_head_stride;  // (Nc, ldv)
  const int qi = blockIdx.x * kDqQueries + threadIdx.x;  // query inside the chunk
  const bool active = qi < chunk;
  const float s_scale = p.scale * kLog2e;
  const long long stat = (static_cast<long long>(b) * p.heads + h) * p.tokens + static_cast<long long>(c) * chunk + qi;

  float q[kD], dout[kD], dq[kD];
  float delta = 0.f, lse2 = 0.f;
  if (active) {
    const T* qr = p.q + (tok0 + qi) * p.ldq + static_cast<long long>(h) * p.q_head_stride;  // (32)
    const T* orow = p.out + (tok0 + qi) * p.ldo + h * kD;                                  // (32)
    const T* dorow = p.dout + (tok0 + qi) * p.lddo + h * kD;                              // (32)
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      q[d] = to_f32(qr[d]) * s_scale;
      dout[d] = to_f32(dorow[d]);
      delta = fmaf(dout[d], to_f32(orow[d]), delta);
    }
    lse2 = p.lse[stat] * kLog2e;
    p.delta[stat] = delta;
  } else {
#pragma unroll
    for (int d = 0; d < kD; ++d) q[d] = dout[d] = 0.f;
  }
#pragma unroll
  for (int d = 0; d < kD; ++d) dq[d] = 0.f;

  for (int j0 = 0; j0 < chunk; j0 += kDqKeys) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.x; i < kDqKeys * kD; i += kDqQueries) {
      const int j = i / kD, d = i % kD;
      const bool in = j0 + j < chunk;
      k_tile[j][d] = in ? to_f32(k[static_cast<long long>(j0 + j) * p.ldk + d]) : 0.f;
      v_tile[j][d] = in ? to_f32(v[static_cast<long long>(j0 + j) * p.ldv + d]) : 0.f;
    }
    __syncthreads();
    const int keys = min(kDqKeys, chunk - j0);
    for (int j = 0; j < keys; ++j) {
      float s = 0.f, dp = 0.f;
#pragma unroll
      for (int d = 0; d < kD; ++d) {
        s = fmaf(q[d], k_tile[j][d], s);
        dp = fmaf(dout[d], v_tile[j][d], dp);
      }
      const float ds = exp2f(s - lse2) * (dp - delta);
#pragma unroll
      for (int d = 0; d < kD; ++d) dq[d] = fmaf(ds, k_tile[j][d], dq[d]);
    }
  }
  if (!active) return;
  T* dqr = p.grad_q + (tok0 + qi) * p.ldgq + h * kD;  // (32)
#pragma unroll
  for (int d = 0; d < kD; ++d) dqr[d] = from_f32<T>(dq[d] * p.scale);
}

template <typename T>
__global__ void __launch_bounds__(2 * kKvKeys) attention_bwd_dkdv(const AreaAttentionBackwardParams<T> p) {
  // q and do tiles as fp32; do starts 16 floats past a multiple of 32 so that the even lanes (reading
  // q) and the odd lanes (reading do) hit different banks.
  __shared__ float tiles[2 * kKvQueries * kD + 16];
  __shared__ float lse2_tile[kKvQueries], delta_tile[kKvQueries];
  float* q_tile = tiles;                          // (queries, d)
  float* do_tile = tiles + kKvQueries * kD + 16;  // (queries, d)
  const int chunk = p.tokens / p.area;
  const int h = blockIdx.y, b = blockIdx.z / p.area, c = blockIdx.z % p.area;
  const long long tok0 = static_cast<long long>(b) * p.tokens + static_cast<long long>(c) * chunk;
  const T* q = p.q + tok0 * p.ldq + static_cast<long long>(h) * p.q_head_stride;  // (Nc, ldq) head h
  const T* dout = p.dout + tok0 * p.lddo + h * kD;                                // (Nc, lddo)
  const long long stat0 = (static_cast<long long>(b) * p.heads + h) * p.tokens + static_cast<long long>(c) * chunk;
  const int role = threadIdx.x & 1;  // 0: k and dk, 1: v and dv
  const int kj = blockIdx.x * kKvKeys + (threadIdx.x >> 1);  // key inside the chunk
  const bool active = kj < chunk;
  const float s_scale = p.scale * kLog2e;

  float a[kD], acc[kD];
  {
    const T* src = role == 0 ? p.k + (tok0 + kj) * p.ldk + static_cast<long long>(h) * p.k_head_stride
                             : p.v + (tok0 + kj) * p.ldv + static_cast<long long>(h) * p.v_head_stride;  // (32)
#pragma unroll
    for (int d = 0; d < kD; ++d) {
      a[d] = active ? to_f32(src[d]) : 0.f;
      acc[d] = 0.f;
    }
  }
  const float* my_tile = role == 0 ? q_tile : do_tile;
  for (int i0 = 0; i0 < chunk; i0 += kKvQueries) {
    __syncthreads();  // the previous tile is consumed
    for (int i = threadIdx.x; i < kKvQueries * kD; i += 2 * kKvKeys) {
      const int r = i / kD, d = i % kD;
      const bool in = i0 + r < chunk;
      q_tile[r * kD + d] = in ? to_f32(q[static_cast<long long>(i0 + r) * p.ldq + d]) : 0.f;
      do_tile[r * kD + d] = in ? to_f32(dout[static_cast<long long>(i0 + r) * p.lddo + d]) : 0.f;
    }
    if (threadIdx.x < kKvQueries) {
      const bool in = i0 + threadIdx.x < chunk;
      lse2_tile[threadIdx.x] = in ? p.lse[stat0 + i0 + threadIdx.x] * kLog2e : 0.f;
      delta_tile[threadIdx.x] = in ? p.delta[stat0 + i0 + threadIdx.x] : 0.f;
    }
    __syncthreads();
    const int queries = min(kKvQueries, chunk - i0);  // the same for the whole block: shuffles stay converged
    for (int i = 0; i < queries; ++i) {
      const float* row = my_tile + i * kD;  // q_i (role 0) or do_i (role 1)
      float dot = 0.f;
#pragma unroll
      for (int d = 0; d < kD; ++d) dot = fmaf(a[d], row[d], dot);
      const float other = __shfl_xor_sync(0xffffffffu, dot, 1);
      const float s = role == 0 ? dot : other;   // <q_i, k_j>
      const float dp = role == 0 ? other : dot;  // <do_i, v_j>
      const float pr = exp2f(s * s_scale - lse2_tile[i]);
      const float coef = role == 0 ? pr * (dp - delta_tile[i]) : pr;
#pragma unroll
      for (int d = 0; d < kD; ++d) acc[d] = fmaf(coef, row[d], acc[d]);
    }
  }
  if (!active) return;
  T* dst = role == 0 ? p.grad_k + (tok0 + kj) * p.ldgk + h * kD : p.grad_v + (tok0 + kj) * p.ldgv + h * kD;  // (32)
  const float f = role == 0 ? p.scale : 1.f;
#pragma unroll
  for (int d = 0; d < kD; ++d) dst[d] = from_f32<T>(acc[d] * f);
}

template <typename T>
void check_params(const AreaAttentionBackwardParams<T>& p) {
  auto fail = [](const std::string& what) { throw InputError("area attention backward: " + what); };
  if (p.dqk != kD || p.dv != kD || !area_attention_can_implement(p.tokens, p.area, p.heads, p.dqk, p.dv))
    fail("unsupported shape: tokens " + std::to_string(p.tokens) + ", area " + std::to_string(p.area) + ", heads " +
         std::to_string(p.heads) + ", dqk " + std::to_string(p.dqk) + ", dv " + std::to_string(p.dv) +
         " (need tokens % area == 0, dqk = dv = 32)");
  if (p.batch < 1 || static_cast<long long>(p.batch) * p.area > 65535)
    fail("batch " + std::to_string(p.batch) + " times area " + std::to_string(p.area) + " outside [1, 65535]");
  if (!p.q || !p.k || !p.v || !p.out || !p.dout || !p.lse || !p.delta || !p.grad_q || !p.grad_k || !p.grad_v)
    fail("null pointer");
  const int used = p.heads * kD;
  if (p.ldq < (p.heads - 1) * p.q_head_stride + kD || p.ldk < (p.heads - 1) * p.k_head_stride + kD ||
      p.ldv < (p.heads - 1) * p.v_head_stride + kD || p.ldo < used || p.lddo < used || p.ldgq < used ||
      p.ldgk < used || p.ldgv < used)
    fail("a row stride is smaller than the channels the heads use");
}

}  // namespace

template <typename T>
void area_attention_backward(const AreaAttentionBackwardParams<T>& p, cudaStream_t stream) {
  check_params(p);
  const int chunk = p.tokens / p.area;
  const dim3 grid_q(ceil_div(chunk, kDqQueries), p.heads, p.batch * p.area);
  attention_bwd_dq<T><<<grid_q, kDqQueries, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
  const dim3 grid_kv(ceil_div(chunk, kKvKeys), p.heads, p.batch * p.area);
  attention_bwd_dkdv<T><<<grid_kv, 2 * kKvKeys, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
}

template void area_attention_backward<float>(const AreaAttentionBackwardParams<float>&, cudaStream_t);
template void area_attention_backward<__half>(const AreaAttentionBackwardParams<__half>&, cudaStream_t);
template void area_attention_backward<__nv_bfloat16>(const AreaAttentionBackwardParams<__nv_bfloat16>&, cudaStream_t);

}  // namespace yolo12::cuda
