// model/model_file.hpp - a .y12 model file read into memory the engine owns and fully validated
// (docs/model-format.md).
#pragma once

#include <cstddef>
#include <cstdint>
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
  const void* data = nullptr;  // into the file's bytes (owned by the ModelFile, 256-byte aligned)
  std::size_t numel() const;
};

// Reads and checks a model file in the documented order; every failure throws yolo12::ModelError
// with a single line naming the file, the tensor, expected versus got, and what to do.
// The whole file is copied into memory the object owns (no mapping: a file changed or truncated
// on disk afterwards cannot reach it). The object is immutable after open() and may be shared
// between threads and Detectors.
class ModelFile {
 public:
  static std::shared_ptr<const ModelFile> open(const std::string& path);
  // The same checks on bytes already in memory (copied); `name` stands for the path in messages.
  static std::shared_ptr<const ModelFile> from_bytes(const std::string& name, const void* bytes, std::size_t size);
  ~ModelFile();
  ModelFile(const ModelFile&) = delete;
  ModelFile& operator=(const ModelFile&) = delete;

  const std::string& path() const { return path_; }
  const nlohmann::json& header() const { return header_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  unsigned format_version() const { return version_; }
  std::size_t file_bytes() const { return size_; }
  // Throws ModelError if absent.
  const TensorInfo& tensor(const std::string& name) const;
  // The tensor's elements as float32 (converting f16).
  std::vector<float> tensor_f32(const std::string& name) const;
  ModelInfo info() const;

 private:
  ModelFile() = default;
  void allocate(std::size_t size);
  void check();  // checks 1.. of docs/model-format.md on bytes_, fills header_ and tensors_
  ModelInfo make_info() const;
  std::string path_;
  nlohmann::json header_;
  std::vector<TensorInfo> tensors_;
  unsigned char* bytes_ = nullptr;  // (size_) the file, 256-byte aligned
  std::size_t size_ = 0;
  unsigned version_ = 0;
};

}  // namespace yolo12::model
