// tests/support.hpp - helpers shared by the test executables.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace yolo12::test {

// Project root (the source tree) and build tree.
std::string source_dir();
std::string binary_dir();
// ../shared/data from the project root (or $YOLO12_SHARED_DATA); "" if absent.
std::string shared_data_dir();
// The committed fixtures folder, tests/data.
std::string test_data_dir();
bool file_exists(const std::string& path);
// <build>/test_tmp/<pid>_<name>, the folder made: a scratch file of this process alone, so that two processes of one
// test (memcheck and racecheck run side by side) never read each other's half-written file.
std::string scratch_path(const std::string& name);
// A file's whole content ("" if it cannot be read).
std::string read_text_file(const std::string& path);

// Converts checkpoint `src` with exporter/export.py to <build>/parity_models/<name>.y12, once per run (without
// recording it as yolo12-infer's default); "" and a reason in `why` when the file, the exporter or python3 with
// numpy is missing or the export fails.
std::string export_model(const std::string& src, const std::string& name, std::string& why);

// An environment variable set to `value` for the life of this object (a switch read when a detector is made, e.g.
// YOLO12_CUDA_STREAMS), then restored: its old value, or unset.
struct EnvScope {
  std::string name, old;
  bool had = false;
  EnvScope(const char* n, const char* value) : name(n) {
    const char* prev = std::getenv(n);
    had = prev != nullptr;
    if (had) old = prev;
    setenv(n, value, 1);
  }
  ~EnvScope() {
    if (had) setenv(name.c_str(), old.c_str(), 1);
    else unsetenv(name.c_str());
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
};

// Seconds since construction (steady clock), for progress lines in long runs.
struct Stopwatch {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

// A float32 / uint8 .npy file (C order). Throws std::runtime_error on anything else.
struct NpyArray {
  std::vector<long long> shape;
  std::vector<float> data;
};
NpyArray load_npy(const std::string& path);
// Reads a .npy, or a gzip-compressed .npy.gz (through `gzip -dc`).
NpyArray load_npy_any(const std::string& path);
void save_npy(const std::string& path, const std::vector<long long>& shape, const float* data);

// Relative L2 error ||a - b|| / ||b||, in double.
double rel_l2(const float* a, const float* b, std::size_t n);
// The same of two equally long vectors of doubles (a kernel's output against a double reference): 0 where both are 0.
double rel_l2(const std::vector<double>& a, const std::vector<double>& ref);

}  // namespace yolo12::test

// Skip the current test case with a message (Catch2 v2 has no SKIP): prints and returns.
#define YOLO12_SKIP_IF(cond, msg)                         \
  do {                                                    \
    if (cond) {                                           \
      WARN("SKIPPED: " << msg);                           \
      return;                                             \
    }                                                     \
  } while (0)
