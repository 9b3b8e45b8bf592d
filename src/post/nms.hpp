// post/nms.hpp - Ultralytics' non_max_suppression and scale_boxes, reproduced on the CPU.
#pragma once

#include <vector>

#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::post {

// The NMS settings, declared once for every implementation (this one, and the CUDA head's kernel
// parameters, which derive from NmsAttrs). Plain values, so a kernel can take them.
struct NmsAttrs {
  float conf = 0.25f;
  float iou = 0.7f;
  int max_det = 300;
  int max_nms = 30000;    // most boxes into NMS (highest scores first)
  float max_wh = 7680.f;  // class offset for class-aware NMS
  bool agnostic = false;
};

struct NmsParams : NmsAttrs {
  std::vector<int> classes;  // empty: all
};

// raw: (4 + nc, A) for one image (cx, cy, w, h in input pixels, then class scores).
// Returns detections in input-pixel xyxy, sorted by descending score.
std::vector<Detection> nms(const float* raw, int nc, int anchors, const NmsParams& params);

// The IoU threshold as the double a user would have typed: the shortest decimal that rounds to this
// float (0.6f -> 0.6, not 0.60000002). torchvision compares the float IoU against the Python double,
// so at a threshold that float rounds upwards this decides whether an IoU equal to the threshold
// suppresses. The CUDA NMS uses it too.
double threshold_as_decimal(float t);

// Maps boxes from letterboxed input pixels back to the original image and clips them.
void scale_boxes(std::vector<Detection>& dets, const pre::LetterboxParams& p);

}  // namespace yolo12::post
