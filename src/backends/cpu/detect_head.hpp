// cpu/detect_head.hpp - the Detect head on the CPU: DFL box decode + sigmoid class scores, into the
// raw head output (the NMS is the pipeline's, pipeline/head.hpp).
//
// For level l (stride s_l, an H_l x W_l grid) and cell (y, x), anchor index a = offset_l + y*W_l + x
// (levels in order, cells row-major), anchor point (x + 0.5, y + 0.5):
//   dist[side] = sum_i i * softmax_i(box[side * reg_max + i])   (side: left, top, right, bottom)
//   x1 = ax - left, y1 = ay - top, x2 = ax + right, y2 = ay + bottom
//   out[0..3, a] = ((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1) * s_l
//   out[4 + c, a] = sigmoid(cls[c])
#pragma once

#include <vector>

#include "backends/cpu/tensor_view.hpp"
#include "graph/graph.hpp"

namespace yolo12::cpu {

class ThreadPool;

// The head's attributes (nc, reg_max) and this call's views. (The CUDA head, decode and NMS on the
// device, takes cuda::DetectHeadParams.)
struct DetectDecodeParams : graph::DetectAttrs {
  std::vector<TensorView> box;  // per level (B, 4 * reg_max, H_l, W_l)
  std::vector<TensorView> cls;  // per level (B, nc, H_l, W_l)
  std::vector<int> strides;     // per level
  TensorView out;               // (B, 4 + nc, 1, A), A = sum_l H_l * W_l
  int batch = 1;
};

void detect_decode(const DetectDecodeParams& p, ThreadPool& pool);

}  // namespace yolo12::cpu
