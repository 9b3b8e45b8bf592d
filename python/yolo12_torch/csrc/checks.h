// checks.h - argument checks of the yolo12 operators, shared by the CPU and CUDA kernels. Each check
// raises a one-line Python error (ValueError, TypeError or NotImplementedError) naming the operator.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

namespace yolo12_torch {

// conv2d: x (B, C, H, W), weight (O, C / groups, k, k), optional bias (O) and residual (B, O, Ho, Wo).
struct ConvArgs {
  int64_t batch, c_in, h, w, c_out, k, ho, wo, stride, pad, dilation, groups;
};
ConvArgs check_conv(const char* op, const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                    const std::optional<at::Tensor>& residual, int64_t stride, int64_t padding, int64_t dilation,
                    int64_t groups);

// area_attention: q, k, v (B, N, heads, 32) of one dtype and device, N divisible by area.
struct AttentionArgs {
  int64_t batch, tokens, heads, area;
};
constexpr int64_t kHeadDim = 32;
AttentionArgs check_attention(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              int64_t area);

// detect_decode: per level box (B, 4 * reg_max, H_l, W_l) and cls (B, nc, H_l, W_l), 1 to 4 levels.
struct DetectArgs {
  int64_t batch, nc, reg_max, anchors;
  std::vector<int64_t> h, w;
  size_t levels() const { return h.size(); }
};
constexpr int64_t kMaxLevels = 4;
DetectArgs check_detect(const char* op, at::TensorList box, at::TensorList cls, at::IntArrayRef strides);

}  // namespace yolo12_torch
