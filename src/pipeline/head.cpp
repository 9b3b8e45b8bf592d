// pipeline/head.cpp - the Detect head's host half: Ultralytics' NMS and scale_boxes (src/post).
#include "pipeline/head.hpp"

#include "yolo12/errors.hpp"

namespace yolo12::pipeline {

namespace {

class DetectHead final : public Head {
 public:
  DetectHead(const graph::DetectHead& spec, const post::NmsParams& nms)
      : nc_(spec.attrs.nc), anchors_(spec.anchors), nms_(nms) {}
  int raw_channels() const override { return 4 + nc_; }
  int raw_anchors() const override { return anchors_; }
  std::vector<Detection> postprocess(const float* raw) const override { return post::nms(raw, nc_, anchors_, nms_); }
  void to_image(std::vector<Detection>& dets, const pre::LetterboxParams& geometry) const override {
    post::scale_boxes(dets, geometry);
  }

 private:
  int nc_, anchors_;
  post::NmsParams nms_;
};

}  // namespace

std::unique_ptr<Head> Head::make(const graph::HeadSpec& spec, const post::NmsParams& nms) {
  switch (spec.kind) {
    case graph::HeadKind::Detect: return std::make_unique<DetectHead>(spec.detect, nms);
  }
  throw ModelError("the model's head is of an unknown kind");
}

}  // namespace yolo12::pipeline
