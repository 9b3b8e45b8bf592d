// pipeline/head.hpp - a task head as the pipeline sees it.
//
// The graph's HeadSpec (graph/graph.hpp) carries the head's metadata, from its module in the model
// file. Each backend implements the head's device half: the decode of the network outputs into the
// raw head output (CPU: backends/cpu/detect_head.cpp; CUDA: backends/cuda/detect.cu, which also runs
// the NMS on the device when its executor says fused_nms). This interface is the host half the
// pipeline calls: the layout of the raw output, the postprocess of an executor that does not fuse
// it, and the mapping of results back to the original image.
//
// Detect is the one head today. A Segment or Pose head adds a HeadKind, a Head subclass here (its
// postprocess and scaling), its decode in each backend, and its fields in yolo12::Result
// (docs/architecture.md, "Adding a head").
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.hpp"
#include "post/nms.hpp"
#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::pipeline {

class Head {
 public:
  // The head of `spec`'s kind, with the postprocess settings.
  static std::unique_ptr<Head> make(const graph::HeadSpec& spec, const post::NmsParams& nms);
  virtual ~Head() = default;
  // The raw head output per image is (channels, anchors) float32.
  virtual int raw_channels() const = 0;
  virtual int raw_anchors() const = 0;
  // Host postprocess of one image's raw output: the kept detections in input pixels, by score.
  virtual std::vector<Detection> postprocess(const float* raw) const = 0;
  // Maps one image's results from the letterboxed input back to the original image.
  virtual void to_image(std::vector<Detection>& detections, const pre::LetterboxParams& geometry) const = 0;
};

}  // namespace yolo12::pipeline
