// post/nms.hpp - Ultralytics' non_max_suppression and scale_boxes, reproduced on the CPU.
#pragma once

#include <vector>

#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::post {

struct NmsParams {
  float conf = 0.25f;
  float iou = 0.7f;
  int max_det = 300;
  bool agnostic = false;
  std::vector<int> classes;  // empty: all
  int max_nms = 30000;       // most boxes into NMS (highest scores first)
  float max_wh = 7680.f;     // class offset for class-aware NMS
};

// raw: (4 + nc, A) for one image (cx, cy, w, h in input pixels, then class scores).
// Returns detections in input-pixel xyxy, sorted by descending score.
std::vector<Detection> nms(const float* raw, int nc, int anchors, const NmsParams& params);

// Maps boxes from letterboxed input pixels back to the original image and clips them.
void scale_boxes(std::vector<Detection>& dets, const pre::LetterboxParams& p);

}  // namespace yolo12::post
