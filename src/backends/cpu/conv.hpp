// cpu/conv.hpp - 2-D convolution with a fused epilogue, float32 NCHW, on the CPU.
//
//   y[b, o, oy, ox] = act(bias[o] + sum_{i, ky, kx} w[o, i, ky, kx] * x[b, g*cin_g + i, iy, ix])
//                     * (gamma ? gamma[o] : 1) + (residual ? residual[b, o, oy, ox] : 0)
//   with g = o / cout_g, iy = oy * stride - pad + ky * dilation (same for x); taps outside the image
//   read zero. act is SiLU (x * sigmoid(x)) or identity.
//
// Two algorithms:
//  - conv2d_depthwise_direct: groups == c_in == c_out (the pe convs, Detect's DWConv). One task per
//    (image, channel); each output row accumulates k*k shifted input rows.
//  - conv2d_im2col_gemm: everything else. Per (image, group) it is the matrix product
//    Y[cout_g, Ho*Wo] = W[cout_g, K] * X_col[K, Ho*Wo], K = cin_g * k * k. A task owns a block of
//    output columns (pixels) and a range of output channels; it gathers its im2col columns into
//    NR-wide packed strips (a plain copy for 1x1 stride-1 convs), then runs an MR x NR register-tile
//    kernel over the prepacked weights, and applies the epilogue to each tile as it leaves the
//    registers. An AVX2+FMA kernel is picked at run time where the CPU has it.
#pragma once

#include <vector>

#include "backends/cpu/tensor_view.hpp"
#include "graph/ops.hpp"

namespace yolo12::cpu {

class ThreadPool;

// The graph op's attributes (c_in, c_out, k, stride, pad, groups, dilation, act) and this call's views.
struct ConvParams : graph::ConvAttrs {
  TensorView x;                    // (B, c_in, H, W)
  TensorView y;                    // (B, c_out, Ho, Wo)
  TensorView residual;             // optional (B, c_out, Ho, Wo); data == nullptr: none
  const float* weight = nullptr;   // (c_out, c_in / groups, k, k)
  const float* packed = nullptr;   // pack_conv_weight(...) of `weight`; nullptr: packed per call
  const float* bias = nullptr;     // (c_out)
  const float* gamma = nullptr;    // optional (c_out) layer-scale
  int batch = 1;
};

// Register tile of the GEMM kernel: MR output channels x NR output pixels.
constexpr int kConvMR = 6;
constexpr int kConvNR = 16;

// True when conv2d() runs this conv with the direct depthwise kernel (which needs no packing).
bool conv_is_depthwise(int c_in, int c_out, int groups);

// Weights rearranged for the GEMM kernel: per group, per MR-row strip of output channels,
// K x MR values (rows past cout_g are zero). Size: groups * ceil(cout_g / MR) * MR * K.
std::vector<float> pack_conv_weight(const float* weight,  // (c_out, c_in / groups, k, k)
                                    int c_out, int c_in, int k, int groups);

// Throws yolo12::InputError if the views do not agree with the conv's shape.
void conv2d(const ConvParams& p, ThreadPool& pool);

}  // namespace yolo12::cpu
