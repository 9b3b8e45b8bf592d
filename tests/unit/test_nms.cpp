// tests/unit/test_nms.cpp - post::nms and post::scale_boxes against Ultralytics' rules, on
// hand-built head outputs where each rule decides the answer (a wrong rule fails a case).
#include <cmath>
#include <vector>

#include "catch.hpp"
#include "post/nms.hpp"
#include "pre/letterbox.hpp"

using yolo12::Detection;
using yolo12::post::NmsParams;

namespace {

// One anchor of a hand-built head output: an xywh box and the scores of some classes.
struct Anchor {
  float cx, cy, w, h;
  std::vector<std::pair<int, float>> scores;  // (class, score); other classes get 0.01
};

// raw: (4 + nc, A) as the Detect head writes it.
std::vector<float> make_raw(const std::vector<Anchor>& anchors, int nc) {
  const std::size_t A = anchors.size();
  std::vector<float> raw((4 + nc) * A, 0.01f);
  for (std::size_t a = 0; a < A; ++a) {
    raw[0 * A + a] = anchors[a].cx;
    raw[1 * A + a] = anchors[a].cy;
    raw[2 * A + a] = anchors[a].w;
    raw[3 * A + a] = anchors[a].h;
    for (auto [c, s] : anchors[a].scores) raw[(4 + c) * A + a] = s;
  }
  return raw;
}

// An anchor from an xyxy box with one class score.
Anchor box(float x1, float y1, float x2, float y2, int cls, float score) {
  return {(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, {{cls, score}}};
}

std::vector<Detection> run(const std::vector<Anchor>& anchors, int nc, const NmsParams& p) {
  const std::vector<float> raw = make_raw(anchors, nc);
  return yolo12::post::nms(raw.data(), nc, static_cast<int>(anchors.size()), p);
}

}  // namespace

TEST_CASE("nms: xywh to xyxy, score and class of the kept box", "[nms]") {
  const auto dets = run({{50.f, 40.f, 20.f, 10.f, {{3, 0.8f}}}}, 5, NmsParams{});
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].box.x1 == 40.f);
  CHECK(dets[0].box.y1 == 35.f);
  CHECK(dets[0].box.x2 == 60.f);
  CHECK(dets[0].box.y2 == 45.f);
  CHECK(dets[0].score == 0.8f);
  CHECK(dets[0].class_id == 3);
}

TEST_CASE("nms: conf threshold is strict", "[nms]") {
  NmsParams p;  // conf 0.25
  const float at = 0.25f, above = std::nextafter(0.25f, 1.f);
  const auto dets = run({box(0, 0, 10, 10, 0, at), box(100, 100, 110, 110, 1, above)}, 2, p);
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 1);
  CHECK(dets[0].score == above);
}

TEST_CASE("nms: one label per box, the best class (first on ties)", "[nms]") {
  // Class 2 (0.6) beats class 1 (0.5): a single detection of class 2, not two.
  auto dets = run({{50, 50, 20, 20, {{1, 0.5f}, {2, 0.6f}}}}, 4, NmsParams{});
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 2);
  CHECK(dets[0].score == 0.6f);
  // Equal scores: the lower class index wins, as torch.max.
  dets = run({{50, 50, 20, 20, {{3, 0.7f}, {1, 0.7f}}}}, 4, NmsParams{});
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 1);
}

TEST_CASE("nms: class-aware by default, agnostic on request", "[nms]") {
  // Two boxes with IoU 0.9 (10x10 and 10x9) of different classes.
  const std::vector<Anchor> a = {box(0, 0, 10, 10, 0, 0.9f), box(0, 0, 10, 9, 1, 0.8f)};
  NmsParams p;
  auto dets = run(a, 2, p);
  REQUIRE(dets.size() == 2);
  CHECK(dets[0].class_id == 0);
  CHECK(dets[1].class_id == 1);
  // The class offset must not move the returned boxes.
  CHECK(dets[1].box.x1 == 0.f);
  CHECK(dets[1].box.y2 == 9.f);
  p.agnostic = true;
  dets = run(a, 2, p);
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 0);
}

TEST_CASE("nms: same class suppressed above the IoU threshold only", "[nms]") {
  NmsParams p;  // iou 0.7
  // IoU 0.8 with the first box: suppressed. IoU 0.6: kept. Disjoint: kept.
  const auto dets = run({box(0, 0, 10, 10, 0, 0.9f), box(0, 0, 10, 8, 0, 0.85f),
                         box(0, 4, 10, 10, 0, 0.8f), box(50, 50, 60, 60, 0, 0.3f)},
                        1, p);
  REQUIRE(dets.size() == 3);
  CHECK(dets[0].score == 0.9f);
  CHECK(dets[1].score == 0.8f);
  CHECK(dets[1].box.y1 == 4.f);
  CHECK(dets[2].score == 0.3f);
}

TEST_CASE("nms: suppression runs in score order, not input order", "[nms]") {
  // B (best score) overlaps A and C (IoU 0.82 each); A and C overlap less (IoU 0.67). In score
  // order B removes both; in input order A would be kept, remove B, and keep C.
  const auto dets = run({box(0, 0, 10, 10, 0, 0.5f), box(0, 1, 10, 11, 0, 0.9f),
                         box(0, 2, 10, 12, 0, 0.6f)},
                        1, NmsParams{});
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].score == 0.9f);
  CHECK(dets[0].box.y1 == 1.f);
}

TEST_CASE("nms: IoU exactly at the threshold", "[nms]") {
  NmsParams p;
  // IoU exactly 0.5 (50 / 100) at iou 0.5: not above, so both kept.
  p.iou = 0.5f;
  auto dets = run({box(0, 0, 10, 10, 0, 0.9f), box(0, 0, 10, 5, 0, 0.8f)}, 1, p);
  CHECK(dets.size() == 2);
  // IoU 60 / 100 = 0.6f (0.60000002) at iou 0.6: torchvision compares the float IoU with the double
  // 0.6 the user typed, so this one is suppressed (a float compare would keep it).
  p.iou = 0.6f;
  dets = run({box(0, 0, 10, 10, 0, 0.9f), box(0, 0, 10, 6, 0, 0.8f)}, 1, p);
  CHECK(dets.size() == 1);
  // IoU 70 / 100 = 0.7f (0.69999999) at iou 0.7 (float rounds down): not above, kept.
  p.iou = 0.7f;
  dets = run({box(0, 0, 10, 10, 0, 0.9f), box(0, 0, 10, 7, 0, 0.8f)}, 1, p);
  CHECK(dets.size() == 2);
}

TEST_CASE("nms: classes filter applies to the best class", "[nms]") {
  NmsParams p;
  p.classes = {2};
  // Anchor 0: best class 1 (0.9), class 2 only second (0.8): dropped, not relabelled as class 2.
  // Anchor 1: best class 2: kept.
  const auto dets = run({{50, 50, 20, 20, {{1, 0.9f}, {2, 0.8f}}}, box(200, 200, 220, 220, 2, 0.4f),
                         box(300, 300, 320, 320, 0, 0.95f)},
                        3, p);
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 2);
  CHECK(dets[0].score == 0.4f);
}

TEST_CASE("nms: max_det keeps the best, sorted by descending score", "[nms]") {
  std::vector<Anchor> a;
  const float scores[] = {0.3f, 0.9f, 0.5f, 0.7f, 0.4f, 0.8f, 0.6f};
  for (int i = 0; i < 7; ++i) a.push_back(box(i * 20.f, 0, i * 20.f + 10, 10, 0, scores[i]));
  NmsParams p;
  auto dets = run(a, 1, p);
  REQUIRE(dets.size() == 7);
  for (std::size_t i = 1; i < dets.size(); ++i) CHECK(dets[i - 1].score > dets[i].score);
  p.max_det = 3;
  dets = run(a, 1, p);
  REQUIRE(dets.size() == 3);
  CHECK(dets[0].score == 0.9f);
  CHECK(dets[1].score == 0.8f);
  CHECK(dets[2].score == 0.7f);
  CHECK(dets[2].box.x1 == 60.f);
}

TEST_CASE("nms: at most max_nms boxes (30000 by default) enter NMS", "[nms]") {
  NmsParams p;
  REQUIRE(p.max_nms == 30000);
  REQUIRE(p.max_wh == 7680.f);
  // 30000 identical boxes (scores 0.5 .. 0.8) plus one lone box with the lowest score (0.3). The cap
  // drops the lone box before NMS, so only one detection remains; without the cap there are two.
  std::vector<Anchor> a;
  for (int i = 0; i < 30000; ++i) a.push_back(box(0, 0, 10, 10, 0, 0.5f + 0.3f * i / 30000.f));
  a.push_back(box(500, 500, 510, 510, 0, 0.3f));
  auto dets = run(a, 1, p);
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].box.x1 == 0.f);
  p.max_nms = 30001;
  dets = run(a, 1, p);
  REQUIRE(dets.size() == 2);
  CHECK(dets[1].box.x1 == 500.f);
}

TEST_CASE("nms: class offset is max_wh per class", "[nms]") {
  // Class 0 box at (7680, 7680) .. (7690, 7690) and class 1 box at (0, 0) .. (10, 10): every
  // coordinate shifted by 1 * 7680, the class-1 box lands exactly on the class-0 box and is
  // suppressed; Ultralytics does the same.
  const auto dets =
      run({box(7680, 7680, 7690, 7690, 0, 0.9f), box(0, 0, 10, 10, 1, 0.8f)}, 2, NmsParams{});
  REQUIRE(dets.size() == 1);
  CHECK(dets[0].class_id == 0);
}

TEST_CASE("nms: nothing above conf gives no detections", "[nms]") {
  NmsParams p;
  p.conf = 0.5f;
  CHECK(run({box(0, 0, 10, 10, 0, 0.5f), box(20, 0, 30, 10, 1, 0.2f)}, 2, p).empty());
}

TEST_CASE("scale_boxes: fixed letterbox, padding removed, clipped to the image", "[nms]") {
  // 810x1080 into 640x640: ratio 640/1080, resized 480x640, 80 pixels of padding left and right.
  const auto p = yolo12::pre::letterbox_params(810, 1080, 640, 640, false);
  REQUIRE(p.left == 80);
  REQUIRE(p.top == 0);
  std::vector<Detection> d(2);
  d[0].box = {80.f, 0.f, 560.f, 640.f};   // the whole resized image
  d[1].box = {40.f, -5.f, 600.f, 700.f};  // beyond it: clipped
  yolo12::post::scale_boxes(d, p);
  CHECK(std::fabs(d[0].box.x1) < 1e-4f);
  CHECK(std::fabs(d[0].box.y1) < 1e-4f);
  CHECK(std::fabs(d[0].box.x2 - 810.f) < 1e-3f);
  CHECK(std::fabs(d[0].box.y2 - 1080.f) < 1e-3f);
  CHECK(d[1].box.x1 == 0.f);
  CHECK(d[1].box.y1 == 0.f);
  CHECK(d[1].box.x2 == 810.f);
  CHECK(d[1].box.y2 == 1080.f);
}

TEST_CASE("scale_boxes: rect letterbox, padding removed", "[nms]") {
  // 1280x720 in rect mode at 640: resized 640x360, padded to 640x384 (12 rows above, 12 below).
  const auto p = yolo12::pre::letterbox_params(1280, 720, 640, 640, true);
  REQUIRE(p.dst_w == 640);
  REQUIRE(p.dst_h == 384);
  REQUIRE(p.top == 12);
  std::vector<Detection> d(1);
  d[0].box = {100.f, 112.f, 200.f, 212.f};
  yolo12::post::scale_boxes(d, p);
  CHECK(std::fabs(d[0].box.x1 - 200.f) < 1e-4f);
  CHECK(std::fabs(d[0].box.y1 - 200.f) < 1e-4f);
  CHECK(std::fabs(d[0].box.x2 - 400.f) < 1e-4f);
  CHECK(std::fabs(d[0].box.y2 - 400.f) < 1e-4f);
}

TEST_CASE("scale_boxes: gains per axis from the rounded resized size", "[nms]") {
  // 1000x333 into 640x640: ratio 0.64, resized 640x213 (213.12 rounds down), top pad 213.
  // Ultralytics divides y by 213 / 333 (not by 0.64): y = 213 + 213 maps to 333 exactly.
  const auto p = yolo12::pre::letterbox_params(1000, 333, 640, 640, false);
  REQUIRE(p.new_h == 213);
  REQUIRE(p.top == 213);
  std::vector<Detection> d(1);
  d[0].box = {0.f, 213.f, 640.f, 426.f};
  yolo12::post::scale_boxes(d, p);
  CHECK(std::fabs(d[0].box.y2 - 333.f) < 1e-4f);
  CHECK(std::fabs(d[0].box.x2 - 1000.f) < 1e-3f);
  CHECK(std::fabs(d[0].box.y1) < 1e-4f);
}
