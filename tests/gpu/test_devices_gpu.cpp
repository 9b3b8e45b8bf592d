// test_devices_gpu.cpp - the multi-device paths (yolo12/devices.hpp, Detector::clone(device, index))
// on the GPUs this machine has: the device list `0`, `0,0` and, with two or more GPUs, `0,1` give
// results identical to one Detector on cuda:0; an ordinal that does not exist is a clear OptionError.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "model_writer.hpp"
#include "support.hpp"
#include "yolo12/devices.hpp"

using namespace yolo12;

namespace {

std::string tiny_model_path() {
  const std::string path = test::scratch_path("devices_gpu_tiny.y12");
  test::write_file(path, test::serialize(test::tiny_model(3, 11)));
  return path;
}

int device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

void require_same(const Result& a, const Result& b) {
  REQUIRE(a.detections.size() == b.detections.size());
  for (std::size_t k = 0; k < a.detections.size(); ++k) {
    CHECK(a.detections[k].score == b.detections[k].score);
    CHECK(a.detections[k].class_id == b.detections[k].class_id);
    CHECK(a.detections[k].box.x1 == b.detections[k].box.x1);
    CHECK(a.detections[k].box.y2 == b.detections[k].box.y2);
  }
}

}  // namespace

TEST_CASE("device lists on the GPU: each entry gives cuda:0's result; bad ordinals are refused", "[devices]") {
  const std::string model = tiny_model_path();
  DetectorOptions opt;
  opt.device = Device::Cuda;
  opt.conf = 0.f;
  opt.max_batch = 2;
  std::vector<std::uint8_t> pixels(50 * 70 * 3);
  std::mt19937 rng(5);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng() & 0xff);
  const ImageView img{pixels.data(), 70, 50, 70 * 3, PixelFormat::BGR8};

  for (Precision precision : {Precision::Fp32, Precision::Fp16}) {
    opt.precision = precision;
    Detector single(model, opt);
    const Result want = single.detect(img);
    REQUIRE(want.detections.size() > 5);
    std::vector<std::string> lists = {"0", "0,0", "cuda:0,0"};
    if (device_count() >= 2) lists.push_back("0,1");
    for (const std::string& list : lists) {
      INFO("devices " << list << (precision == Precision::Fp16 ? " fp16" : " fp32"));
      DetectorPool pool(model, opt, parse_devices(list));
      for (std::size_t i = 0; i < pool.size(); ++i) {
        CHECK(pool[i].device_name() == pool.device(i).name());
        require_same(pool[i].detect(img), want);
        const auto batch = pool[i].detect(std::vector<ImageView>{img, img});
        require_same(batch[1], want);
      }
    }
    // clone onto the same device, and (where there is one) onto another.
    require_same(single.clone(Device::Cuda, 0).detect(img), want);
    if (device_count() >= 2) {
      Detector other = single.clone(Device::Cuda, 1);
      CHECK(other.device_name() == "cuda:1");
      require_same(other.detect(img), want);
    }
  }

  const int n = device_count();
  for (const std::string& list : {"cuda:" + std::to_string(n), "0," + std::to_string(n)}) {
    INFO(list);
    try {
      DetectorPool pool(model, opt, parse_devices(list));
      FAIL("accepted " << list);
    } catch (const OptionError& e) {
      CHECK(std::string(e.what()).find("cuda:" + std::to_string(n)) != std::string::npos);
    }
  }
}
