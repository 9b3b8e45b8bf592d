// tests/unit/test_cpu_parity.cpp - the whole network on the CPU against Ultralytics' raw head output.
//
// Every entry of tests/data/fixtures.json names a checkpoint (or the shared ONNX weights it was made
// from), an input tensor and the reference output (1, 4 + nc, A) that Ultralytics computed in fp32.
// The model is converted with exporter/export.py into the build tree, loaded with ModelFile::open,
// run by CpuExecutor, and its relative L2 error must be within the manifest's tolerance (about ten
// times the reference's own fp32-versus-fp64 difference). Skips with a message when python3 +
// numpy, the exporter or ../shared/data are missing.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "backends/cpu/executor.hpp"
#include "model/model_file.hpp"
#include "support.hpp"

namespace t = yolo12::test;

namespace {

nlohmann::json manifest() {
  std::ifstream in(t::test_data_dir() + "/fixtures.json");
  if (!in) return nlohmann::json();
  return nlohmann::json::parse(in);
}

// Resolves a manifest path: "shared:<rel>" or <rel> under the entry's root (tests/data or shared).
std::string resolve(const std::string& root, const std::string& rel) {
  const std::string shared = t::shared_data_dir();
  if (rel.rfind("shared:", 0) == 0) return shared.empty() ? "" : shared + "/" + rel.substr(7);
  if (root == "shared") return shared.empty() ? "" : shared + "/" + rel;
  return t::test_data_dir() + "/" + rel;
}

}  // namespace

TEST_CASE("CPU raw output equals Ultralytics on every fixture", "[cpu][parity]") {
  const nlohmann::json m = manifest();
  YOLO12_SKIP_IF(!m.is_array(), "tests/data/fixtures.json is absent");
  int compared = 0;
  for (const auto& e : m) {
    const std::string name = e.at("name");
    const std::string root = e.value("root", "tests");
    std::string model_rel;
    if (e.contains("model") && e.at("model").is_string())
      model_rel = e.at("model");
    else if (e.contains("model_source") && e.at("model_source").is_string())
      model_rel = e.at("model_source");
    if (model_rel.empty()) {
      WARN("SKIPPED " << name << ": the manifest names no model");
      continue;
    }
    const std::string model_src = resolve(root, model_rel);
    const std::string input = resolve(root, e.at("input"));
    const std::string output = resolve(root, e.at("output"));
    if (model_src.empty() || input.empty() || output.empty()) {
      WARN("SKIPPED " << name << ": ../shared/data is absent (set YOLO12_SHARED_DATA)");
      continue;
    }
    std::string why;
    // One export per source file, named after it.
    std::string stem = model_rel.substr(model_rel.find_last_of("/:") == std::string::npos ? 0 : model_rel.find_last_of("/:") + 1);
    const std::string y12 = t::export_model(model_src, stem, why);
    if (y12.empty()) {
      WARN("SKIPPED " << name << ": " << why);
      continue;
    }
    INFO(name);
    REQUIRE(t::file_exists(input));
    REQUIRE(t::file_exists(output));
    const auto file = yolo12::model::ModelFile::open(y12);
    const auto weights = yolo12::cpu::load_weights(*file);
    const t::NpyArray x = t::load_npy_any(input);
    const t::NpyArray ref = t::load_npy_any(output);
    REQUIRE(x.shape.size() == 4);
    REQUIRE(ref.shape.size() == 3);
    const int batch = static_cast<int>(x.shape[0]);
    yolo12::cpu::CpuExecutor exec(weights, file->header(), static_cast<int>(x.shape[2]), static_cast<int>(x.shape[3]),
                                  batch, 0);
    REQUIRE(exec.channels() == ref.shape[1]);
    REQUIRE(exec.anchors() == ref.shape[2]);
    std::vector<float> out(static_cast<std::size_t>(batch) * exec.channels() * exec.anchors(), -1.f);
    exec.forward(x.data.data(), batch, out.data());
    const double err = t::rel_l2(out.data(), ref.data.data(), out.size());
    const double tol = e.at("tolerance_rel_l2");
    const double fp64 = e.value("fp32_vs_fp64_rel_l2", -1.0);
    std::printf("%-32s %4lldx%-4lld rel L2 %.3g (tolerance %.3g; reference fp32 vs fp64 %.3g)\n", name.c_str(),
                static_cast<long long>(x.shape[2]), static_cast<long long>(x.shape[3]), err, tol, fp64);
    CHECK(err <= tol);
    ++compared;
  }
  WARN(compared << " fixtures compared");
}

TEST_CASE("CPU batch of two equals two single runs", "[cpu][parity]") {
  const nlohmann::json m = manifest();
  YOLO12_SKIP_IF(!m.is_array(), "tests/data/fixtures.json is absent");
  // The first fixture with a committed checkpoint.
  for (const auto& e : m) {
    if (!e.contains("model") || !e.at("model").is_string() || e.value("root", "tests") != "tests") continue;
    std::string why;
    const std::string y12 = t::export_model(resolve("tests", e.at("model")), e.at("model"), why);
    YOLO12_SKIP_IF(y12.empty(), why);
    const auto file = yolo12::model::ModelFile::open(y12);
    const t::NpyArray x = t::load_npy_any(resolve("tests", e.at("input")));
    const int h = static_cast<int>(x.shape[2]), w = static_cast<int>(x.shape[3]);
    const std::size_t image = static_cast<std::size_t>(3) * h * w;
    // image 0: the fixture input mirrored left-right; image 1: the fixture input.
    std::vector<float> two(2 * image);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < h; ++y)
        for (int xx = 0; xx < w; ++xx)
          two[(static_cast<std::size_t>(c) * h + y) * w + xx] = x.data[(static_cast<std::size_t>(c) * h + y) * w + (w - 1 - xx)];
    std::copy(x.data.begin(), x.data.begin() + image, two.begin() + image);
    yolo12::cpu::CpuExecutor exec(yolo12::cpu::load_weights(*file), file->header(), h, w, 2, 0);
    const std::size_t n = static_cast<std::size_t>(exec.channels()) * exec.anchors();
    std::vector<float> batched(2 * n), single0(n), single1(n);
    exec.forward(two.data(), 2, batched.data());
    exec.forward(two.data(), 1, single0.data());
    exec.forward(two.data() + image, 1, single1.data());
    REQUIRE(t::rel_l2(batched.data(), single0.data(), n) < 1e-6);
    REQUIRE(t::rel_l2(batched.data() + n, single1.data(), n) < 1e-6);
    // ... and the two images really differ.
    REQUIRE(t::rel_l2(single0.data(), single1.data(), n) > 1e-3);
    return;
  }
  WARN("SKIPPED: no fixture with a committed checkpoint");
}
