// src/backends/cuda/detect.cuh - the Detect head's decode and Ultralytics' non_max_suppression on the GPU.
//
// Three launches, all on one stream, nothing allocated, no host synchronisation (capturable):
//   1. detect_decode: one thread per (image, anchor) over P3, P4, P5 in one pass. DFL (softmax over
//      reg_max bins per side, expectation with weights 0..reg_max-1), anchor = cell centre, distances
//      to (cx, cy, w, h) times the level's stride, sigmoid of every class logit. Optionally writes the
//      raw head (B, 4 + nc, A) in fp32 (forward_raw parity); then picks the best class (first maximum),
//      keeps it when score > conf (strict, as Ultralytics) and its class passes the filter, and appends
//      a candidate {xyxy, score, class, anchor} with an atomic counter.
//   2. rank_sort_candidates: each candidate's rank in (score descending, anchor ascending) order is
//      counted against all candidates of its image; ranks below max_nms are scattered into place. So
//      the atomic append order never matters and the result is deterministic.
//   3. nms_greedy: one block per image walks the sorted candidates in chunks of 256: each candidate is
//      tested against the boxes kept so far (in parallel), then against the earlier candidates of its
//      chunk through a 256 x 256 suppression bit matrix walked by one thread. This is exactly the greedy
//      NMS of torchvision (boxes offset by class * max_wh unless agnostic; suppress IoU > iou; IoU from
//      the offset boxes in fp32 as torchvision computes it), stopping once max_det boxes are kept.
// Output: per image the kept count and (max_det, 6) rows {x1, y1, x2, y2, score, class} in input
// pixels, by descending score.
#pragma once

#include <cstddef>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <vector>

#include "common.cuh"
#include "graph/graph.hpp"
#include "ops.cuh"
#include "post/nms.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::cuda {

constexpr int kMaxDetectLevels = 4;

// The level of head-output anchor a (levels concatenated P3, P4, ...; h, w each level's grid) and its
// cell index within that level. Shared by the decode and its backward.
__host__ __device__ inline int anchor_level(const int* h, const int* w, int levels, int a, int& local) {
  int level = 0;
  local = a;
  while (level + 1 < levels && local >= h[level] * w[level]) {
    local -= h[level] * w[level];
    ++level;
  }
  return level;
}

struct DetectCandidate {
  float x1, y1, x2, y2;  // input pixels (not offset by class)
  float score;
  int cls;
  int anchor;
  int pad;
};

// The head's attributes (nc, reg_max), the NMS settings (post::NmsAttrs: conf, iou, max_det, max_nms,
// max_wh, agnostic) and this call's views and workspace. (The CPU decode takes cpu::DetectDecodeParams.)
template <typename T>  // T = float or __half (the network's activations)
struct DetectHeadParams : graph::DetectAttrs, post::NmsAttrs {
  int batch = 1;
  int levels = 3;
  const T* box[kMaxDetectLevels] = {};  // per level (B, H_l, W_l, ldb) view, 4 * reg_max channels used
  int ldb[kMaxDetectLevels] = {};
  const T* cls[kMaxDetectLevels] = {};  // per level (B, H_l, W_l, ldc) view, nc channels used
  int ldc[kMaxDetectLevels] = {};
  int h[kMaxDetectLevels] = {}, w[kMaxDetectLevels] = {};
  float stride[kMaxDetectLevels] = {};
  int anchors = 0;  // A = sum H_l * W_l (P3 first, row-major)

  float* raw = nullptr;  // optional (B, 4 + nc, A) float32; nullptr: not written

  // Post-processing; when `candidates` is nullptr only the raw head is produced.
  const unsigned char* class_keep = nullptr;  // optional (nc): 1 = keep the class; nullptr = all
  DetectCandidate* candidates = nullptr;      // workspace (B, A)
  DetectCandidate* sorted = nullptr;          // workspace (B, min(A, max_nms))
  int* candidate_count = nullptr;             // workspace (B)
  float* dets = nullptr;                      // (B, max_det, 6) x1 y1 x2 y2 score class
  int* det_count = nullptr;                   // (B)
};

// Bytes of workspace detect_forward needs for the candidates (three regions, 256-byte aligned);
// detect_workspace_carve points a DetectHeadParams' workspace pointers into such a block, sized from
// p.batch, p.anchors and p.max_nms: set those first (to the largest batch that will run).
std::size_t detect_workspace_bytes(int batch, int anchors, int max_nms);
template <typename T>
void detect_workspace_carve(DetectHeadParams<T>& p, void* workspace);

// Limits of the kernels: levels <= kMaxDetectLevels, 1 <= max_det <= 1024, reg_max in [1, 64].
bool detect_can_implement(int levels, int reg_max, int nc, int max_det);

// Enqueues decode (+ raw), and if p.candidates is set, candidate sort and NMS.
template <typename T>
void detect_forward(const DetectHeadParams<T>& p, cudaStream_t stream);

// The Detect head on the device, for one executor: the CUDA implementation of the graph's head
// (pipeline/head.hpp has its host half). Built once with the executor: the params bound to the
// executor's output maps and the NMS settings, and its own buffers sized for max_batch (candidate
// workspace, class filter, kept boxes on the device and in pinned host memory). Both enqueue
// functions only enqueue (capturable).
template <typename T>
class DetectHead {
 public:
  // Throws ModelError (ctx.cannot_run) for a head the kernels cannot run.
  DetectHead(const graph::HeadSpec& head, const BindContext<T>& ctx, const post::NmsParams& nms);
  // Decode only: the raw head (batch, 4 + nc, A) float32 into device memory `raw`.
  void enqueue_raw(int batch, float* raw, cudaStream_t stream) const;
  // Decode + NMS (fused_nms) and the copy of the kept boxes to pinned host memory.
  void enqueue_detect(int batch, cudaStream_t stream) const;
  // After the stream has finished enqueue_detect: per image the kept boxes, input pixels, by score.
  void read(int batch, std::vector<Detection>* out) const;
  std::size_t workspace_bytes() const { return workspace_.bytes() + out_dev_.bytes(); }

 private:
  std::size_t out_bytes(int batch) const;
  DetectHeadParams<T> params_;
  int max_batch_ = 1;
  DeviceBuffer workspace_;  // candidates | sorted | counts | class filter
  DeviceBuffer out_dev_;    // counts (max_batch) | kept boxes (max_batch, max_det, 6)
  PinnedBuffer out_host_;
};

}  // namespace yolo12::cuda
