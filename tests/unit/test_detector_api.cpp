// Detector facade: options are validated before any work, bad image views are refused with
// InputError and leave the detector usable, a bad model path is a ModelError naming it.
#include <cmath>
#include <cstdint>
#include <random>

#include "catch.hpp"
#include "model_writer.hpp"
#include "support.hpp"
#include "yolo12/yolo12.hpp"

using namespace yolo12;
using namespace yolo12::test;

namespace {

std::string tiny_model_path() {
  const std::string path = scratch_path("api_tiny.y12");
  write_file(path, serialize(tiny_model(3, 11)));
  return path;
}

DetectorOptions cpu_options() {
  DetectorOptions o;
  o.device = Device::Cpu;
  o.cpu_threads = 1;
  return o;
}

bool message_has(const std::exception& e, const std::string& what) {
  const std::string msg = e.what();
  if (msg.find(what) != std::string::npos) return true;
  UNSCOPED_INFO("message: " << msg << "\nexpected to contain: " << what);
  return false;
}

}  // namespace

TEST_CASE("a bad model path is a ModelError naming the path", "[api]") {
  try {
    Detector d("/nonexistent/dir/model.y12", cpu_options());
    FAIL("no error");
  } catch (const ModelError& e) {
    CHECK(message_has(e, "/nonexistent/dir/model.y12"));
  }
  REQUIRE_THROWS_AS(read_model_info("/nonexistent/dir/model.y12"), ModelError);
}

TEST_CASE("impossible options are refused when the detector is created", "[api]") {
  const std::string path = tiny_model_path();
  struct Case {
    const char* what;
    void (*edit)(DetectorOptions&);
  };
  const Case cases[] = {
      {"input size", [](DetectorOptions& o) { o.input_height = o.input_width = 100; }},
      {"input size", [](DetectorOptions& o) { o.input_height = -32; o.input_width = 64; }},
      {"max_batch", [](DetectorOptions& o) { o.max_batch = 0; }},
      {"conf", [](DetectorOptions& o) { o.conf = 1.5f; }},
      {"conf", [](DetectorOptions& o) { o.conf = -0.1f; }},
      {"iou", [](DetectorOptions& o) { o.iou = 2.f; }},
      {"max_det", [](DetectorOptions& o) { o.max_det = 0; }},
      {"class id 3", [](DetectorOptions& o) { o.classes = {0, 3}; }},
      {"class id -1", [](DetectorOptions& o) { o.classes = {-1}; }},
      {"device index", [](DetectorOptions& o) { o.device_index = -1; }},
  };
  for (const Case& c : cases) {
    DetectorOptions o = cpu_options();
    c.edit(o);
    INFO("case " << c.what);
    try {
      Detector d(path, o);
      FAIL("no error");
    } catch (const OptionError& e) {
      CHECK(message_has(e, c.what));
    }
  }
}

TEST_CASE("YOLO12_CPU_SPIN_US: a bad value is an OptionError naming it; polling or not, the same detections",
          "[api][thread_pool]") {
  const std::string path = tiny_model_path();
  for (const char* bad : {"abc", "-5", "1000001", "12us", " 7"}) {
    INFO("YOLO12_CPU_SPIN_US='" << bad << "'");
    EnvScope env("YOLO12_CPU_SPIN_US", bad);
    try {
      Detector d(path, cpu_options());
      FAIL("no error");
    } catch (const OptionError& e) {
      CHECK(message_has(e, "YOLO12_CPU_SPIN_US"));
    }
  }
  std::vector<std::uint8_t> pixels(60 * 90 * 3);
  std::mt19937 rng(5);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng() & 0xff);
  const ImageView img{pixels.data(), 90, 60, 90 * 3, PixelFormat::BGR8};
  DetectorOptions o = cpu_options();
  o.cpu_threads = 3;
  o.conf = 0.001f;
  std::vector<Result> results;
  for (const char* spin : {"0", "", "1000000"}) {  // sleeping, the default (200 us), a 1 s poll
    EnvScope env("YOLO12_CPU_SPIN_US", spin);
    Detector d(path, o);
    for (int i = 0; i < 3; ++i) results.push_back(d.detect(img));
  }
  REQUIRE(!results[0].detections.empty());
  for (const Result& r : results) {
    REQUIRE(r.detections.size() == results[0].detections.size());
    for (std::size_t i = 0; i < r.detections.size(); ++i) {
      CHECK(r.detections[i].score == results[0].detections[i].score);
      CHECK(r.detections[i].box.x1 == results[0].detections[i].box.x1);
      CHECK(r.detections[i].box.y2 == results[0].detections[i].box.y2);
      CHECK(r.detections[i].class_id == results[0].detections[i].class_id);
    }
  }
}

TEST_CASE("model info", "[api]") {
  const ModelInfo info = read_model_info(tiny_model_path());
  CHECK(info.num_classes == 3);
  CHECK(info.family == "yolo12");
  CHECK(info.strides == std::vector<int>{8, 16, 32});
  const std::string s = info.summary();
  CHECK(s.find("classes:    3 (class0, class1, class2)") != std::string::npos);
  CHECK(s.find("64x64") != std::string::npos);
}

TEST_CASE("read_model_info runs the graph checks a detector runs: a file no detector can load fails it", "[api]") {
  // Layer 4 at stride 1 keeps every tensor's shape (so the file itself is sound) but leaves the P5
  // level at 4 x 4 for the 64 x 64 input, which a stride of 32 cannot give.
  TestModel m = tiny_model(3, 11);
  m.header["layers"][4]["s"] = 1;
  const std::string path = scratch_path("api_bad_level.y12");
  write_file(path, serialize(m));
  try {
    read_model_info(path);
    FAIL("read_model_info passed a file no detector can load");
  } catch (const ModelError& e) {
    CHECK(message_has(e, "level 2"));
  }
  REQUIRE_THROWS_AS(Detector(path, cpu_options()), ModelError);
}

TEST_CASE("detect on the CPU: bad views are refused, good ones work, clone shares the model", "[api]") {
  Detector det(tiny_model_path(), cpu_options());
  CHECK(det.device_name() == "cpu");
  std::vector<std::uint8_t> pixels(50 * 70 * 3);
  std::mt19937 rng(3);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng() & 0xff);
  ImageView good{pixels.data(), 70, 50, 70 * 3, PixelFormat::BGR8};

  ImageView v = good;
  v.data = nullptr;
  REQUIRE_THROWS_AS(det.detect(v), InputError);
  v = good;
  v.width = 0;
  REQUIRE_THROWS_AS(det.detect(v), InputError);
  v = good;
  v.pitch = 10;
  REQUIRE_THROWS_AS(det.detect(v), InputError);
  REQUIRE_THROWS_AS(det.detect(std::vector<ImageView>{good, good}), InputError);  // max_batch 1

  const Result r = det.detect(good);  // still usable after the errors
  CHECK(r.image_width == 70);
  CHECK(r.image_height == 50);
  CHECK(r.input_width == 64);
  CHECK(r.input_height == 64);
  for (const Detection& d : r.detections) {
    CHECK(d.box.x1 >= 0.f);
    CHECK(d.box.x2 <= 70.f);
    CHECK(d.score > 0.25f);
  }
  Detector twin = det.clone();
  const Result r2 = twin.detect(good);
  REQUIRE(r2.detections.size() == r.detections.size());
  for (std::size_t i = 0; i < r.detections.size(); ++i) CHECK(r2.detections[i].box.x1 == r.detections[i].box.x1);

  // The raw head: (1, 4 + nc, A) with A = 8*8 + 4*4 + 2*2 at 64x64.
  std::vector<float> x(3 * 64 * 64);
  for (auto& e : x) e = static_cast<float>(rng() % 256) / 255.f;
  int channels = 0, anchors = 0;
  const auto raw = det.forward_raw(x.data(), 1, 64, 64, &channels, &anchors);
  CHECK(channels == 7);
  CHECK(anchors == 84);
  CHECK(raw.size() == static_cast<std::size_t>(channels * anchors));
  REQUIRE_THROWS_AS(det.forward_raw(x.data(), 1, 60, 64, &channels, &anchors), InputError);
}

TEST_CASE("asking for CUDA where there is none is an OptionError", "[api]") {
  DetectorOptions o = cpu_options();
  o.device = Device::Cuda;
  int count = 0;
  (void)count;
  try {
    Detector d(tiny_model_path(), o);
    SUCCEED("a CUDA device is present");
  } catch (const OptionError& e) {
    CHECK(message_has(e, "cuda"));
  }
}

TEST_CASE("rect batch of differently sized images: each image as if it ran alone", "[api][rect]") {
  // Batches (docs/api.md): in rect mode every image gets its own minimum rectangle; images sharing one
  // run together. The same policy on every backend (tests/gpu/test_model_gpu.cpp checks CUDA).
  DetectorOptions o = cpu_options();
  o.input_height = o.input_width = 128;
  o.rect = true;
  o.max_batch = 4;
  o.conf = 0.05f;
  Detector det(tiny_model_path(), o);
  std::mt19937 rng(5);
  struct Image {
    int w, h;
    std::vector<std::uint8_t> px;
  };
  std::vector<Image> images = {{200, 100, {}}, {100, 200, {}}, {150, 150, {}}, {210, 96, {}}};
  std::vector<ImageView> views;
  for (Image& im : images) {
    im.px.resize(static_cast<std::size_t>(im.w) * im.h * 3);
    for (auto& p : im.px) p = static_cast<std::uint8_t>(rng() & 0xff);
    views.push_back(ImageView{im.px.data(), im.w, im.h, static_cast<std::size_t>(im.w) * 3, PixelFormat::BGR8});
  }
  const std::vector<Result> batch = det.detect(views);
  REQUIRE(batch.size() == views.size());
  const int want_in[4][2] = {{128, 64}, {64, 128}, {128, 128}, {128, 64}};  // (w, h): 0 and 3 share one
  for (std::size_t i = 0; i < views.size(); ++i) {
    INFO("image " << i << " " << views[i].width << "x" << views[i].height);
    const Result single = det.detect(views[i]);
    CHECK(batch[i].input_width == want_in[i][0]);
    CHECK(batch[i].input_height == want_in[i][1]);
    CHECK(single.input_width == batch[i].input_width);
    CHECK(single.input_height == batch[i].input_height);
    CHECK(batch[i].image_width == views[i].width);
    REQUIRE(!single.detections.empty());
    REQUIRE(batch[i].detections.size() == single.detections.size());
    for (std::size_t k = 0; k < single.detections.size(); ++k) {
      CHECK(batch[i].detections[k].class_id == single.detections[k].class_id);
      CHECK(std::fabs(batch[i].detections[k].score - single.detections[k].score) < 1e-5f);
      CHECK(std::fabs(batch[i].detections[k].box.x1 - single.detections[k].box.x1) < 1e-3f);
      CHECK(std::fabs(batch[i].detections[k].box.y2 - single.detections[k].box.y2) < 1e-3f);
    }
  }
}
