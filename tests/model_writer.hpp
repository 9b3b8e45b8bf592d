// tests/model_writer.hpp - builds .y12 files in tests (valid ones, and ones broken on purpose).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace yolo12::test {

struct TestTensor {
  std::string name;
  std::vector<long long> shape;
  std::string dtype = "f32";
  std::vector<float> values;  // numel values (converted to f16 when dtype is f16)
};

struct TestModel {
  nlohmann::json header;  // without "tensors" and "data_size": serialize() fills them
  std::vector<TestTensor> tensors;
};

// A tiny but real detect architecture: five strided 3x3 Convs (strides 2..32) and a Detect head on
// the last three, nc classes; every tensor the architecture requires, filled with random values.
TestModel tiny_model(int nc = 3, unsigned seed = 1);

// The file bytes: magic, version, header length, JSON, padding to 256, tensors at 256-aligned offsets.
std::string serialize(const TestModel& model);
// The bytes for a given header and data blob, as they are (for corrupting the table by hand).
std::string serialize_raw(const std::string& header_json, const std::string& data, unsigned version = 1);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace yolo12::test
