// tests/gpu/model_fixtures.hpp - the whole-model fixtures (tests/data/fixtures.json) that the GPU kernel tests run a
// Detector on: the exported model (tools/gpu_check.sh exports them into $YOLO12_TEST_MODELS, else <build>/models),
// the input, Ultralytics' output and the fp16 bound; and the labels of the steps an fp16 CUDA executor makes for a
// fixture's model. test_conv_chain, test_stem_pair and test_halo_pair share it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "backends/cuda/executor.cuh"
#include "catch.hpp"
#include "model/model_file.hpp"
#include "support.hpp"
#include "yolo12/yolo12.hpp"

namespace yolo12::test {

inline std::string test_models_dir() {
  if (const char* env = std::getenv("YOLO12_TEST_MODELS")) return env;
  return binary_dir() + "/models";
}

struct ModelFixture {
  std::string name, model;
  NpyArray x, ref;  // the input (1, 3, H, W) and Ultralytics' raw output
  int h = 0, w = 0;
  double bound16 = 0;        // the fp16 bound: twice PyTorch's own fp16 error
  DetectorOptions options;   // CUDA, fp16, at the fixture's input size
};

// f(fixture) for each fixture of `names` whose model is exported (a WARN for each that is not); returns how many ran.
inline int for_each_model_fixture(const std::set<std::string>& names,
                                  const std::function<void(const ModelFixture&)>& f) {
  std::ifstream in(test_data_dir() + "/fixtures.json");
  REQUIRE(in);
  const nlohmann::json fixtures = nlohmann::json::parse(in);
  // YOLO12_TEST_FIXTURE=substring: only the matching fixtures (a sanitizer process per fixture, as in test_model_gpu).
  const char* only = std::getenv("YOLO12_TEST_FIXTURE");
  int ran = 0;
  for (const auto& fx : fixtures) {
    ModelFixture c;
    c.name = fx["name"].get<std::string>();
    if (!names.count(c.name)) continue;
    if (only && *only && c.name.find(only) == std::string::npos) continue;
    std::string stem = fx["model"].get<std::string>();
    stem = stem.substr(0, stem.find_last_of('.'));
    c.model = test_models_dir() + "/" + stem + ".y12";
    if (!file_exists(c.model)) {
      WARN("SKIPPED " << c.name << ": " << c.model << " not exported (tools/gpu_check.sh)");
      continue;
    }
    INFO("fixture " << c.name);
    c.x = load_npy_any(test_data_dir() + "/" + fx["input"].get<std::string>());
    c.ref = load_npy_any(test_data_dir() + "/" + fx["output"].get<std::string>());
    c.h = static_cast<int>(c.x.shape.at(2));
    c.w = static_cast<int>(c.x.shape.at(3));
    c.bound16 = 2 * fx["fp16_vs_fp64_rel_l2"].get<double>();
    c.options.device = Device::Cuda;
    c.options.precision = Precision::Fp16;
    c.options.input_height = c.h;
    c.options.input_width = c.w;
    f(c);
    ++ran;
  }
  if (ran == 0) WARN("SKIPPED: no fixture model exported");
  return ran;
}

// The fixtures of the fused kernels' whole-model cases (test_dw_branch, test_halo_pair, test_stem_pair): yolo12n at 640
// and at 320, and the narrow yolo12l at 320. yolo12n at 320 too, so that the sanitizers can take the 320 fixtures one
// process each (YOLO12_TEST_FIXTURE), as for test_model_gpu: the racecheck of test_dw_branch's case ran out of host
// memory with the 640 fixture in it.
inline const std::set<std::string>& fused_kernel_fixtures() {
  static const std::set<std::string> names = {"yolo12n_rand_bus_640", "yolo12n_rand_bus_320",
                                              "yolo12l_narrow_rand_bus_320"};
  return names;
}

// The labels of the network steps of an fp16 CUDA executor for fixture c's model at its input size, under the conv
// variants as they are set now (each fused op's label names its kernel). Throws std::runtime_error where no stream
// can be made (no Catch macro here: see cuda_ok in kernel_test_support.cuh).
inline std::vector<std::string> fp16_step_labels(const ModelFixture& c) {
  const auto file = model::ModelFile::open(c.model);
  const auto weights =
      cuda::upload_weights(*file, cuda::network_graph(file->header(), c.h, c.w), Precision::Fp16, 0);
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    throw std::runtime_error("fp16_step_labels: no CUDA stream");
  std::vector<std::string> labels;
  try {
    ExecutorConfig cfg;
    cfg.input_h = c.h;
    cfg.input_w = c.w;
    const auto ex = cuda::make_executor(weights, *file, cfg, stream);
    for (const cuda::Step& step : ex->network()) labels.push_back(step.label);
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  return labels;
}

// YOLO12_TEST_VARIANT_PARTS: a comma-separated subset of the parts of the fused kernels' whole-model cases
// (test_dw_branch, test_halo_pair, test_stem_pair), unset or empty for all of them:
//   plain  the model with the fused form's variant off;
//   on     with it on (run twice: a fused kernel must be deterministic);
//   tuned  with it on and kernel tuning (its choices from YOLO12_CONV_TUNE_CACHE where that holds them);
//   steps  the executor's step labels (which ops the fused kernel took).
// So a sanitizer can take one part a process, as test_model_gpu's YOLO12_TEST_MODEL_PARTS allows: the racecheck of
// test_dw_branch's case on the narrow yolo12l, all parts in one process, was killed at 130 GB of host memory
// (thirty-fourth session).
inline bool variant_part(const std::string& part) {
  const char* env = std::getenv("YOLO12_TEST_VARIANT_PARTS");
  if (!env || !*env) return true;
  const std::string parts = std::string(",") + env + ",";
  return parts.find("," + part + ",") != std::string::npos;
}

// Fixture c's raw output on the fp16 CUDA detector with one fused form's conv variant off, on (run twice: a fused
// kernel must be deterministic) and on with kernel tuning, and each one's rel L2 against Ultralytics; only the parts
// variant_part selects ("plain", "on", "tuned"), the others left empty with ran_* false. `scope(on)` returns an
// object that holds the variant's setting for its lifetime (a VariantScope). Throws std::runtime_error where an
// output is not the reference's size.
struct VariantOutputs {
  std::vector<float> off, on, on_again, tuned;
  double e_off = 0, e_on = 0, e_tuned = 0;
  bool ran_off = false, ran_on = false, ran_tuned = false;
};
// "1.23e-03", or "not run" for a part that did not run.
inline std::string error_or_skip(bool ran, double e) {
  if (!ran) return "not run";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", e);
  return buf;
}
// A raw output's rel L2 against fixture c's reference. Throws std::runtime_error where its size is not the
// reference's (no Catch macro here: see cuda_ok in kernel_test_support.cuh).
inline double reference_error(const ModelFixture& c, const std::vector<float>& out) {
  const std::size_t n = c.ref.data.size();
  if (out.size() != n) throw std::runtime_error("a raw output of " + c.name + " is not the reference's size");
  return rel_l2(out.data(), c.ref.data.data(), n);
}
template <typename Scope>
VariantOutputs variant_outputs(const ModelFixture& c, Scope&& scope) {
  VariantOutputs r;
  const auto run = [&](const DetectorOptions& o) {
    Detector d(c.model, o);
    return d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr);
  };
  if (variant_part("plain")) {
    const auto off = scope(false);
    r.off = run(c.options);
    r.e_off = reference_error(c, r.off);
    r.ran_off = true;
  }
  if (variant_part("on")) {
    const auto on = scope(true);
    Detector d(c.model, c.options);
    r.on = d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr);
    r.on_again = d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr);
    r.e_on = reference_error(c, r.on);
    reference_error(c, r.on_again);  // its size
    r.ran_on = true;
  }
  if (variant_part("tuned")) {
    const auto on = scope(true);
    DetectorOptions t = c.options;
    t.tune_kernels = true;
    r.tuned = run(t);
    r.e_tuned = reference_error(c, r.tuned);
    r.ran_tuned = true;
  }
  return r;
}
// The line a whole-model case prints for r: "[tag] fixture fp16 vs Ultralytics: plain E, <fused> E, <fused> tuned E
// (bound B)", "not run" for a part that did not run.
inline std::string variant_line(const char* tag, const char* fused, const ModelFixture& c, const VariantOutputs& r) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.2e", c.bound16);
  std::string name = c.name;
  if (name.size() < 28) name.resize(28, ' ');
  return std::string("[") + tag + "] " + name + " fp16 vs Ultralytics: plain " + error_or_skip(r.ran_off, r.e_off) +
         ", " + fused + " " + error_or_skip(r.ran_on, r.e_on) + ", " + fused + " tuned " +
         error_or_skip(r.ran_tuned, r.e_tuned) + " (bound " + bound + ")";
}

// How many of `labels` contain `part`.
inline int count_containing(const std::vector<std::string>& labels, const std::string& part) {
  int n = 0;
  for (const std::string& l : labels) n += l.find(part) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace yolo12::test
