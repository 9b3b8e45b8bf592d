// src/backends/cuda/conv_backward.cuh - the backward pass of the conv of conv.cuh, for training
// (python/yolo12_torch is its user; the inference engine never calls it).
//
// Forward (conv.cuh):  z = conv(x, W) + bias,  y = act(z) + residual,  act = SiLU or identity.
// Given dy (the gradient of y):
//   dz    = dy * act'(z)                         silu_backward (z recomputed by the caller)
//   dx    = conv_transpose(dz, W)                conv2d_dgrad: the forward kernels (conv2d_forward) run
//           on dz, zero-inserted when stride > 1, with W packed transposed (c_in <-> c_out) and flipped
//   dW    = sum over pixels of dz (x) x-patch    conv2d_wgrad: split-K partial sums, then one reduction
//   dbias = sum over pixels of dz                (the same launch as dW)
//   dresidual = dy                               (nothing to compute)
//
// Layouts are those of conv.cuh: NHWC views (element (n, y, x, c) at ptr[((n * H + y) * W + x) * ld + c]);
// W and dW are OIHW (c_out, c_in / groups, k, k), in the element type T (float or __half), as PyTorch
// holds them. Accumulation is fp32 everywhere. Launches never synchronise; the workspaces are the
// caller's (sizes from the *_bytes functions). Every params struct derives from the forward conv's
// ConvShape (its attributes and sizes; act is ignored: the caller applies act' with silu_backward).
#pragma once

#include <cstddef>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "conv.cuh"

namespace yolo12::cuda {

// ---- weights packed on the device -----------------------------------------------------------------

template <typename T>
struct ConvPackParams : ConvShape {  // the conv whose weights w are (OIHW, the element type)
  const T* w = nullptr;  // (c_out, c_in / groups, k, k)
  T* dst = nullptr;      // conv_packed_weight_elems(target) elements, 16-byte aligned
  bool transposed = false;  // false: target = s; true: target = conv2d_dgrad_shape(s) (swapped, flipped)
};
// What conv_pack_weights does on the host, on the device and from T weights.
template <typename T>
void conv_pack_weights_device(const ConvPackParams<T>& p, cudaStream_t stream);

// ---- dx ---------------------------------------------------------------------------------------------

// The stride-1 conv that computes dx: input dz zero-inserted to (B, Hu, Wu, c_out) with
// Hu = H + 2 pad - dilation (k - 1) (likewise Wu), c_in and c_out swapped, pad' = dilation (k - 1) - pad,
// same k, dilation and groups, no activation; its output is (B, H, W, c_in).
ConvShape conv2d_dgrad_shape(const ConvShape& s);
// Whether conv2d_dgrad can use the forward kernels for s (pad <= dilation (k - 1) and the dx conv
// passes conv_can_implement); otherwise it runs conv2d_dgrad_naive.
bool conv2d_dgrad_uses_forward_kernels(const ConvShape& s);

template <typename T>
struct ConvDgradParams : ConvShape {  // the forward conv
  const T* dz = nullptr;   // (B, Ho, Wo, lddz) view, c_out channels used
  int lddz = 0;
  const T* w = nullptr;    // (c_out, c_in / groups, k, k), OIHW
  T* dx = nullptr;         // (B, H, W, lddx) view, c_in channels written
  int lddx = 0;
  T* packed = nullptr;     // workspace: conv_packed_weight_elems(conv2d_dgrad_shape(s)) elements, 16-byte aligned
  T* inserted = nullptr;   // workspace: (B, Hu, Wu, c_out) when stride > 1 (conv2d_dgrad_inserted_elems)
};
std::size_t conv2d_dgrad_inserted_elems(const ConvShape& s);  // 0 when stride is 1
template <typename T>
void conv2d_dgrad(const ConvDgradParams<T>& p, cudaStream_t stream);
// One thread per dx element, any shape: the fallback and the oracle of conv2d_dgrad.
template <typename T>
void conv2d_dgrad_naive(const ConvDgradParams<T>& p, cudaStream_t stream);

// ---- dW and dbias -----------------------------------------------------------------------------------

template <typename T>
struct ConvWgradParams : ConvShape {  // the forward conv
  const T* x = nullptr;      // (B, H, W, ldx) view, c_in channels used
  int ldx = 0;
  const T* dz = nullptr;     // (B, Ho, Wo, lddz) view, c_out channels used
  int lddz = 0;
  T* dw = nullptr;           // (c_out, c_in / groups, k, k) OIHW, or nullptr: not wanted
  T* dbias = nullptr;        // (c_out), or nullptr: not wanted
  float* workspace = nullptr;  // conv2d_wgrad_workspace_bytes(s) bytes, 16-byte aligned
};
std::size_t conv2d_wgrad_workspace_bytes(const ConvShape& s);
template <typename T>
void conv2d_wgrad(const ConvWgradParams<T>& p, cudaStream_t stream);

// ---- act' -------------------------------------------------------------------------------------------

template <typename T>
struct SiluBackwardParams {
  long long pixels = 0;   // B * Ho * Wo
  int c = 0;              // channels used in each view
  const T* dy = nullptr;  // (pixels, lddy)
  int lddy = 0;
  const T* z = nullptr;   // (pixels, ldz): the pre-activation
  int ldz = 0;
  T* dz = nullptr;        // (pixels, lddz): dy * sigmoid(z) * (1 + z * (1 - sigmoid(z)))
  int lddz = 0;
};
template <typename T>
void silu_backward(const SiluBackwardParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
