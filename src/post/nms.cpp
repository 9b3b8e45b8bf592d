// post/nms.cpp - Ultralytics' predict-time non_max_suppression (single label per box) and
// scale_boxes, reproduced on the CPU with the same float arithmetic and comparisons:
//
//   1. per anchor: best class (first on ties) and its score; keep it if score > conf (float
//      compare, strict) and, with a `classes` list, if the class is in it;
//   2. more than max_nms candidates: keep the max_nms highest scores;
//   3. class-aware: each box is shifted by class * max_wh (float) so boxes of different classes
//      never overlap (agnostic: no shift);
//   4. greedy NMS as torchvision.ops.nms: highest score first (stable on ties), a later box is
//      suppressed when its float IoU with a kept box is > iou, compared in double;
//   5. at most max_det detections, in descending score order.
#include "post/nms.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>

namespace yolo12::post {

namespace {

struct Candidate {
  float x1, y1, x2, y2;  // input pixels
  float score;
  int cls;
};

}  // namespace

double threshold_as_decimal(float t) {
  char text[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(t));
    const double d = std::strtod(text, nullptr);
    if (static_cast<float>(d) == t) return d;
  }
  return static_cast<double>(t);
}

std::vector<Detection> nms(const float* raw, int nc, int anchors, const NmsParams& params) {
  std::vector<Detection> out;
  if (raw == nullptr || nc < 1 || anchors < 1 || params.max_det < 1) return out;
  const std::size_t A = static_cast<std::size_t>(anchors);

  // 1. Candidates: best class per anchor, strictly above conf, optionally in `classes`.
  //    raw rows: 0..3 = cx, cy, w, h; 4 + c = score of class c. Each row is (A).
  std::vector<Candidate> cand;
  for (std::size_t a = 0; a < A; ++a) {
    int best = 0;
    float best_score = raw[4 * A + a];
    for (int c = 1; c < nc; ++c) {
      const float s = raw[(4 + static_cast<std::size_t>(c)) * A + a];
      if (s > best_score) best_score = s, best = c;
    }
    if (!(best_score > params.conf)) continue;
    if (!params.classes.empty() &&
        std::find(params.classes.begin(), params.classes.end(), best) == params.classes.end())
      continue;
    // xywh -> xyxy in float: half = wh / 2, then centre -/+ half.
    const float cx = raw[0 * A + a], cy = raw[1 * A + a];
    const float hw = raw[2 * A + a] / 2.f, hh = raw[3 * A + a] / 2.f;
    cand.push_back({cx - hw, cy - hh, cx + hw, cy + hh, best_score, best});
  }
  if (cand.empty()) return out;

  // Order by descending score, stable (anchor order on ties), as torchvision sorts.
  std::vector<std::size_t> order(cand.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return cand[i].score > cand[j].score; });
  // 2. At most max_nms boxes go into NMS.
  if (params.max_nms > 0 && order.size() > static_cast<std::size_t>(params.max_nms))
    order.resize(static_cast<std::size_t>(params.max_nms));

  // 3. Boxes shifted by class * max_wh (float), and their areas, in score order.
  const std::size_t n = order.size();
  std::vector<float> bx1(n), by1(n), bx2(n), by2(n), area(n);
  for (std::size_t k = 0; k < n; ++k) {
    const Candidate& c = cand[order[k]];
    const float shift = params.agnostic ? 0.f : static_cast<float>(c.cls) * params.max_wh;
    bx1[k] = c.x1 + shift;
    by1[k] = c.y1 + shift;
    bx2[k] = c.x2 + shift;
    by2[k] = c.y2 + shift;
    area[k] = (bx2[k] - bx1[k]) * (by2[k] - by1[k]);
  }

  // 4. Greedy suppression.
  const double iou_thres = threshold_as_decimal(params.iou);
  std::vector<char> suppressed(n, 0);
  for (std::size_t i = 0; i < n && out.size() < static_cast<std::size_t>(params.max_det); ++i) {
    if (suppressed[i]) continue;
    const Candidate& c = cand[order[i]];
    Detection d;
    d.box = {c.x1, c.y1, c.x2, c.y2};
    d.score = c.score;
    d.class_id = c.cls;
    out.push_back(d);
    for (std::size_t j = i + 1; j < n; ++j) {
      if (suppressed[j]) continue;
      const float w = std::max(0.f, std::min(bx2[i], bx2[j]) - std::max(bx1[i], bx1[j]));
      const float h = std::max(0.f, std::min(by2[i], by2[j]) - std::max(by1[i], by1[j]));
      const float inter = w * h;
      const float iou = inter / (area[i] + area[j] - inter);
      if (static_cast<double>(iou) > iou_thres) suppressed[j] = 1;
    }
  }
  // 5. max_det is enforced by the loop above (kept boxes come out in descending score order).
  return out;
}

void scale_boxes(std::vector<Detection>& dets, const pre::LetterboxParams& p) {
  if (p.src_w < 1 || p.src_h < 1 || p.dst_w < 1 || p.dst_h < 1) return;
  // As Ultralytics, recomputed from the two shapes (input dst, original src): gain, rounded
  // unpadded size, one gain per axis from it, and the pad before the image.
  const double gain = std::min(static_cast<double>(p.dst_h) / p.src_h, static_cast<double>(p.dst_w) / p.src_w);
  const int new_h = std::max(static_cast<int>(pre::round_half_even(p.src_h * gain)), 1);
  const int new_w = std::max(static_cast<int>(pre::round_half_even(p.src_w * gain)), 1);
  // Division by a float gain, as torch divides a float32 tensor by a Python scalar.
  const float gain_y = static_cast<float>(static_cast<double>(new_h) / p.src_h);
  const float gain_x = static_cast<float>(static_cast<double>(new_w) / p.src_w);
  const float pad_x = static_cast<float>(pre::round_half_even((p.dst_w - new_w) / 2.0 - 0.1));
  const float pad_y = static_cast<float>(pre::round_half_even((p.dst_h - new_h) / 2.0 - 0.1));
  const float w = static_cast<float>(p.src_w), h = static_cast<float>(p.src_h);
  for (Detection& d : dets) {
    d.box.x1 = std::clamp((d.box.x1 - pad_x) / gain_x, 0.f, w);
    d.box.y1 = std::clamp((d.box.y1 - pad_y) / gain_y, 0.f, h);
    d.box.x2 = std::clamp((d.box.x2 - pad_x) / gain_x, 0.f, w);
    d.box.y2 = std::clamp((d.box.y2 - pad_y) / gain_y, 0.f, h);
  }
}

}  // namespace yolo12::post
