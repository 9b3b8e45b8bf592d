// src/backends/cuda/detect_backward.cuh - the backward pass of the Detect decode of detect.cuh (the raw
// head: DFL boxes in input pixels and sigmoid class scores), for training (python/yolo12_torch).
//
// Forward for anchor a of level l (stride s, cell (gx, gy), anchor point (gx + 0.5, gy + 0.5)):
//   p_side,i = softmax_i(box[side * reg_max + i]),  dist_side = sum_i i p_side,i
//   out[0..3, a] = (ax + (right - left) / 2, ay + (bottom - top) / 2, left + right, top + bottom) * s
//   out[4 + c, a] = sigmoid(cls[c])
// Given g = dL/dout:
//   dleft = s (g_w - g_cx / 2), dright = s (g_w + g_cx / 2), dtop = s (g_h - g_cy / 2), dbottom = s (g_h + g_cy / 2)
//   dbox[side * reg_max + i] = p_side,i (i - dist_side) dside,  dcls[c] = g_c sigmoid(cls[c]) (1 - sigmoid(cls[c]))
// One thread per (image, anchor), P3, P4, P5 in one launch, fp32 arithmetic.
// Layouts: the maps are NHWC views as in detect.cuh; g is (B, 4 + nc, A) contiguous.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "detect.cuh"

namespace yolo12::cuda {

// The head's attributes (graph::DetectAttrs: nc, reg_max) and this call's views.
template <typename T>  // float or __half
struct DetectBackwardParams : graph::DetectAttrs {
  int batch = 1;
  int levels = 3;
  const T* box[kMaxDetectLevels] = {};  // per level (B, H_l, W_l, ldb) view, 4 * reg_max channels
  int ldb[kMaxDetectLevels] = {};
  const T* cls[kMaxDetectLevels] = {};  // per level (B, H_l, W_l, ldc) view, nc channels
  int ldc[kMaxDetectLevels] = {};
  int h[kMaxDetectLevels] = {}, w[kMaxDetectLevels] = {};
  float stride[kMaxDetectLevels] = {};
  int anchors = 0;                      // A = sum H_l * W_l
  const T* dout = nullptr;              // (B, 4 + nc, A)
  T* dbox[kMaxDetectLevels] = {};       // per level (B, H_l, W_l, lddb) view
  int lddb[kMaxDetectLevels] = {};
  T* dcls[kMaxDetectLevels] = {};       // per level (B, H_l, W_l, lddc) view
  int lddc[kMaxDetectLevels] = {};
};

// Throws yolo12::InputError where detect_can_implement rejects the head, or for null pointers,
// strides too small for the channels, or anchors != sum H_l * W_l.
template <typename T>
void detect_decode_backward(const DetectBackwardParams<T>& p, cudaStream_t stream);

}  // namespace yolo12::cuda
