// tests/model_writer.cpp - see model_writer.hpp.
#include "model_writer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "core/half.hpp"
#include "graph/graph.hpp"

namespace yolo12::test {

TestModel tiny_model(int nc, unsigned seed) {
  TestModel m;
  nlohmann::json layers = nlohmann::json::array();
  const int chans[] = {8, 16, 16, 16, 16};
  int c1 = 3;
  for (int i = 0; i < 5; ++i) {
    layers.push_back({{"index", i}, {"type", "Conv"}, {"from", {i == 0 ? -1 : i - 1}}, {"c1", c1},
                      {"c2", chans[i]}, {"k", 3}, {"s", 2}, {"p", 1}, {"g", 1}, {"d", 1}, {"act", "silu"}});
    c1 = chans[i];
  }
  layers.push_back({{"index", 5}, {"type", "Detect"}, {"from", {2, 3, 4}}, {"nc", nc}, {"reg_max", 16},
                    {"ch", {16, 16, 16}}, {"legacy", false}, {"c2", 64}, {"c3", std::max(16, std::min(nc, 100))}});
  nlohmann::json names = nlohmann::json::array();
  for (int i = 0; i < nc; ++i) names.push_back("class" + std::to_string(i));
  m.header = {{"format", "yolo12-model"}, {"family", "yolo12"}, {"task", "detect"}, {"scale", "t"},
              {"nc", nc}, {"names", names}, {"strides", {8, 16, 32}}, {"imgsz", {64, 64}}, {"reg_max", 16},
              {"dtype", "f32"}, {"layers", layers},
              {"source", {{"path", "tiny"}, {"format", "test"}, {"producer", "tests/model_writer.cpp"}}}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.3f);
  for (const auto& p : graph::required_params(m.header)) {
    TestTensor t;
    t.name = p.name;
    t.shape = p.shape;
    std::size_t n = 1;
    for (long long d : p.shape) n *= static_cast<std::size_t>(d);
    t.values.resize(n);
    for (float& v : t.values) v = normal(rng);
    m.tensors.push_back(std::move(t));
  }
  return m;
}

std::string serialize_raw(const std::string& header_json, const std::string& data, unsigned version) {
  std::string out("Y12MODEL", 8);
  auto put = [&out](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  put(version, 4);
  put(0, 4);
  put(header_json.size(), 8);
  out += header_json;
  while (out.size() % 256 != 0) out.push_back('\0');
  out += data;
  return out;
}

std::string serialize(const TestModel& model) {
  nlohmann::json header = model.header;
  nlohmann::json table = nlohmann::json::array();
  std::string data;
  for (const TestTensor& t : model.tensors) {
    while (data.size() % 256 != 0) data.push_back('\0');
    const std::size_t offset = data.size();
    for (float v : t.values) {
      if (t.dtype == "f16") {
        const std::uint16_t h = float_to_half(v);
        data.append(reinterpret_cast<const char*>(&h), 2);
      } else {
        data.append(reinterpret_cast<const char*>(&v), 4);
      }
    }
    table.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"offset", offset},
                     {"size", data.size() - offset}});
  }
  header["tensors"] = table;
  header["data_size"] = data.size();
  return serialize_raw(header.dump(), data);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot write " + path);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace yolo12::test
