// test_devices.cpp - device lists and DetectorPool (yolo12/devices.hpp), on the CPU. The CUDA
// paths of the pool (an entry per GPU, an invalid ordinal) run in tests/gpu/test_model_gpu.cpp.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "model_writer.hpp"
#include "support.hpp"
#include "yolo12/devices.hpp"

using yolo12::Device;
using yolo12::DeviceSpec;

static std::string tiny_model_path() {
  const std::string path = yolo12::test::scratch_path("devices_tiny.y12");
  yolo12::test::write_file(path, yolo12::test::serialize(yolo12::test::tiny_model(3, 11)));
  return path;
}

static std::vector<std::string> names(const std::vector<DeviceSpec>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) out.push_back(d.name());
  return out;
}

TEST_CASE("parse_devices: the spellings of one device and of lists", "[devices]") {
  using V = std::vector<std::string>;
  CHECK(names(yolo12::parse_devices("")) == V{"auto"});
  CHECK(names(yolo12::parse_devices("auto")) == V{"auto"});
  CHECK(names(yolo12::parse_devices("cpu")) == V{"cpu"});
  CHECK(names(yolo12::parse_devices("CPU")) == V{"cpu"});
  CHECK(names(yolo12::parse_devices("cuda")) == V{"cuda:0"});
  CHECK(names(yolo12::parse_devices("cuda:3")) == V{"cuda:3"});
  CHECK(names(yolo12::parse_devices("0")) == V{"cuda:0"});
  CHECK(names(yolo12::parse_devices("0,1")) == V{"cuda:0", "cuda:1"});
  CHECK(names(yolo12::parse_devices("cuda:0,1")) == V{"cuda:0", "cuda:1"});
  CHECK(names(yolo12::parse_devices(" cuda:1 , cuda:0 ")) == V{"cuda:1", "cuda:0"});
  CHECK(names(yolo12::parse_devices("cpu,cpu")) == V{"cpu", "cpu"});
  CHECK(names(yolo12::parse_devices("0,0")) == V{"cuda:0", "cuda:0"});
}

TEST_CASE("parse_devices: bad entries are OptionErrors naming them", "[devices]") {
  for (const char* bad : {"mps", "cuda:", "cuda:-1", "-1", "0,,1", "1,", "cuda:x", "auto,0", "99999", "cuda:0:1"}) {
    INFO(bad);
    try {
      yolo12::parse_devices(bad);
      FAIL("accepted " << bad);
    } catch (const yolo12::OptionError& e) {
      CHECK(std::string(e.what()).find("device") != std::string::npos);
    }
  }
  std::string many;
  for (int i = 0; i < 65; ++i) many += (i ? ",0" : "0");
  CHECK_THROWS_AS(yolo12::parse_devices(many), yolo12::OptionError);
}

TEST_CASE("DetectorPool on CPU entries: one detector per entry, each giving the single detector's result",
          "[devices]") {
  const std::string model = tiny_model_path();
  yolo12::DetectorOptions opt;
  opt.device = Device::Cpu;
  opt.cpu_threads = 1;
  opt.conf = 0.f;  // keep every candidate: many detections to compare
  yolo12::Detector single(model, opt);
  yolo12::DetectorPool pool(model, opt, yolo12::parse_devices("cpu,cpu,cpu"));
  REQUIRE(pool.size() == 3);
  std::vector<std::uint8_t> pixels(50 * 70 * 3);
  std::mt19937 rng(5);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng() & 0xff);
  const yolo12::ImageView img{pixels.data(), 70, 50, 70 * 3, yolo12::PixelFormat::BGR8};
  const yolo12::Result want = single.detect(img);
  REQUIRE(want.detections.size() > 5);
  for (std::size_t i = 0; i < pool.size(); ++i) {
    CHECK(pool.device(i).name() == "cpu");
    CHECK(pool[i].device_name() == "cpu");
    const yolo12::Result got = pool[i].detect(img);
    REQUIRE(got.detections.size() == want.detections.size());
    for (std::size_t k = 0; k < got.detections.size(); ++k) {
      CHECK(got.detections[k].score == want.detections[k].score);
      CHECK(got.detections[k].box.x1 == want.detections[k].box.x1);
      CHECK(got.detections[k].class_id == want.detections[k].class_id);
    }
  }
  // clone(device) onto the CPU from a CPU detector is a plain clone; an invalid index is refused.
  CHECK(single.clone(Device::Cpu, 0).device_name() == "cpu");
  CHECK_THROWS_AS(single.clone(Device::Cuda, -1), yolo12::OptionError);
  CHECK_THROWS_AS(yolo12::DetectorPool(model, opt, {}), yolo12::OptionError);
  CHECK_THROWS_AS(yolo12::DetectorPool(model, opt, {DeviceSpec{Device::Auto, 0}, DeviceSpec{Device::Cpu, 0}}),
                  yolo12::OptionError);
}

TEST_CASE("DetectorPool: CUDA entries without a CUDA device, or an ordinal that does not exist, are clear "
          "OptionErrors", "[devices]") {
  const std::string model = tiny_model_path();
  yolo12::DetectorOptions opt;
  opt.cpu_threads = 1;
  for (const char* list : {"cpu,cuda:0", "cuda:999", "0,999"}) {
    INFO(list);
    try {
      yolo12::DetectorPool pool(model, opt, yolo12::parse_devices(list));
      // Only a machine with a GPU gets here, and only for the first list.
      CHECK(std::string(list) == "cpu,cuda:0");
    } catch (const yolo12::OptionError& e) {
      CHECK(std::string(e.what()).find("cuda") != std::string::npos);
    }
  }
}
