// fuzz/fuzz_model_file.cpp - libFuzzer target: the whole model loader on a file's bytes.
//
// The input is a .y12 file. ModelFile::from_bytes runs every check of docs/model-format.md, then the
// graph is built at the model's default size and its memory budget planned, as a Detector would.
// So that mutations of the header reach the checks behind the checksum, an input that ends with a
// "Y12CHECK" trailer gets its checksum recomputed first (the checksum check itself is covered by
// the unit tests and by inputs whose trailer magic the fuzzer broke). Anything but a clean
// yolo12::Error is a finding: ASan/UBSan reports, other exceptions (uncaught, so libFuzzer reports
// them), timeouts and memory over -rss_limit_mb.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/checksum.hpp"
#include "model/memory_budget.hpp"
#include "model/model_file.hpp"
#include "yolo12/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<unsigned char> bytes(data, data + size);
  if (size >= 40 && std::memcmp(bytes.data() + size - 16, "Y12CHECK", 8) == 0) {
    const std::uint64_t sum = yolo12::model::tree_checksum(bytes.data(), size - 16, 1);
    for (int i = 0; i < 8; ++i) bytes[size - 8 + i] = static_cast<unsigned char>(sum >> (8 * i));
  }
  try {
    auto mf = yolo12::model::ModelFile::from_bytes("fuzz.y12", bytes.data(), bytes.size());
    const auto info = mf->info();
    yolo12::model::memory_budget(*mf, info.input_height, info.input_width, 1);
  } catch (const yolo12::Error&) {
  }
  return 0;
}
