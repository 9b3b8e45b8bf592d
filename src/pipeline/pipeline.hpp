// pipeline/pipeline.hpp - the one detection pipeline, for every backend.
//
// Owns, for one Detector: the resolved options, image validation, letterbox geometry, the grouping
// of a batch by input shape, the shape-keyed cache of executors, the stages the executor does not
// fuse (letterbox on the host, the head's postprocess), stage timing, box scaling back to the image
// and the Result. The backend only supplies executors (core/executor.hpp).
//
// Batches: in fixed mode every image is padded to the configured input, so a batch is one group. In
// rect mode every image gets its own minimum rectangle, exactly as if it were detected alone; images
// that share a rectangle run together, groups in order of their first image. So a result never
// depends on the other images of its batch, on either backend (docs/api.md, "Batches").
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::model {
class ModelFile;
}

namespace yolo12::pipeline {

// Fills the defaults from the model and rejects what cannot be honoured (OptionError).
DetectorOptions resolve_options(DetectorOptions options, const ModelInfo& info);
// The executor settings the resolved options map to, at the configured input size.
ExecutorConfig executor_config(const DetectorOptions& resolved);

// Executors by input shape, most recently used first; at most kCapacity are kept (rect mode meets
// up to ~20 shapes per orientation at 640, and each executor holds its activation memory).
class ExecutorCache {
 public:
  static constexpr std::size_t kCapacity = 4;
  explicit ExecutorCache(Backend& backend, ExecutorConfig base) : backend_(&backend), base_(std::move(base)) {}
  Executor& get(int input_h, int input_w);

 private:
  Backend* backend_;
  ExecutorConfig base_;
  std::list<std::pair<std::pair<int, int>, std::unique_ptr<Executor>>> entries_;
};

class Pipeline {
 public:
  // `options` as resolve_options returned them.
  Pipeline(std::shared_ptr<const model::ModelFile> model, const DetectorOptions& options,
           std::unique_ptr<Backend> backend);
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::vector<Result> detect(const std::vector<ImageView>& images);
  std::vector<float> forward_raw(const float* nchw, int batch, int height, int width, int* channels, int* anchors);
  std::unique_ptr<Pipeline> clone() const;
  std::string device_name() const { return backend_->device_name(); }

 private:
  // Runs the images `group` (indices into images), which share one input shape; adds its stage
  // times to `total`.
  void run_group(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry,
                 const std::vector<std::size_t>& group, std::vector<Result>& results, StageTimes& total);

  std::shared_ptr<const model::ModelFile> model_;
  DetectorOptions options_;
  int max_stride_ = 32;
  std::unique_ptr<Backend> backend_;
  ExecutorCache cache_;
  bool host_images_only_ = true;  // the executor reads pixels on the host (no fused preprocess)
  // Host buffers of the stages the executor does not fuse.
  std::vector<float> input_;  // (batch, 3, H, W) letterboxed images
  std::vector<float> raw_;    // (batch, C, A) raw head output
};

}  // namespace yolo12::pipeline
