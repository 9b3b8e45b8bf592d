// fuzz/fuzz_model_header.cpp - libFuzzer target: the header JSON alone, in a well-formed file.
//
// The input is the header JSON text. The target lays it out as a version-2 file (fixed header,
// JSON, padding, a data section of zero bytes of the size the JSON's "data_size" asks for, up to
// 1 MiB, and a correct checksum), so every mutation reaches the JSON limits, the exact integer
// reader, the tensor table, the layer limits and the graph builder, which a mutated binary file
// rarely does. Then the graph is built at the default size and its memory planned, as in fuzz_model_file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/checksum.hpp"
#include "model/json_field.hpp"
#include "model/memory_budget.hpp"
#include "model/model_file.hpp"
#include "yolo12/errors.hpp"

namespace {

void put(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The data size the JSON asks for, when it parses within the loader's own bounds; else 0.
std::size_t wanted_data_size(const char* begin, const char* end) {
  try {
    const auto h = yolo12::model::parse_bounded(begin, end, 8, 1u << 20);
    long long n = 0;
    if (h.is_object() && h.contains("data_size") && yolo12::model::exact_int(h["data_size"], 0, 1 << 20, &n))
      return static_cast<std::size_t>(n);
  } catch (const std::exception&) {
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const char* json = reinterpret_cast<const char*>(data);
  std::string file("Y12MODEL", 8);
  put(file, 2, 4);
  put(file, 0, 4);
  put(file, size, 8);
  file.append(json, size);
  file.resize((file.size() + 255) / 256 * 256, '\0');
  file.resize(file.size() + wanted_data_size(json, json + size), '\0');
  const std::uint64_t sum = yolo12::model::tree_checksum(reinterpret_cast<const unsigned char*>(file.data()), file.size(), 1);
  file += "Y12CHECK";
  put(file, sum, 8);
  try {
    auto mf = yolo12::model::ModelFile::from_bytes("fuzz.y12", file.data(), file.size());
    const auto info = mf->info();
    yolo12::model::memory_budget(*mf, info.input_height, info.input_width, 1);
  } catch (const yolo12::Error&) {
  }
  return 0;
}
