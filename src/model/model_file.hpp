// model/model_file.hpp - memory-mapped, fully validated yolo12 model file (docs/model-format.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "yolo12/yolo12.hpp"

namespace yolo12::model {

enum class DType { F32, F16 };

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<long long> shape;
  std::size_t offset = 0;  // from data_start
  std::size_t size = 0;    // bytes
  const void* data = nullptr;  // into the mapping
  std::size_t numel() const;
};

// Opens and checks a model file in the documented order; every failure throws yolo12::ModelError
// with a single line naming the file, the tensor, expected versus got, and what to do.
// The object is immutable after open() and may be shared between threads and Detectors.
class ModelFile {
 public:
  static std::shared_ptr<const ModelFile> open(const std::string& path);
  ~ModelFile();

  const std::string& path() const { return path_; }
  const nlohmann::json& header() const { return header_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // Throws ModelError if absent.
  const TensorInfo& tensor(const std::string& name) const;
  // The tensor's elements as float32 (converting f16).
  std::vector<float> tensor_f32(const std::string& name) const;
  ModelInfo info() const;

 private:
  ModelFile() = default;
  ModelInfo make_info() const;
  std::string path_;
  nlohmann::json header_;
  std::vector<TensorInfo> tensors_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
};

}  // namespace yolo12::model
