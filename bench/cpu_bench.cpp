// bench/cpu_bench.cpp - yolo12-cpu-bench: CPU timings of the library, for
// bench/cpu_vs_ultralytics.py (which runs it next to Ultralytics/PyTorch and writes the table).
//
//   yolo12-cpu-bench MODEL.y12 --image RAW W H [--size 640] [--rect] [--threads 2]
//                    [--runs 20] [--warmup 3]
//
// RAW is the decoded image as bare BGR bytes (H rows of W * 3), so this program needs no image
// decoder. Measured with std::chrono::steady_clock, after --warmup untimed runs:
//   forward     Detector::forward_raw on the letterboxed (1, 3, size, size) tensor: the network only;
//   end_to_end  Detector::detect on the image: letterbox + network + NMS + boxes back to the image,
//               with the library's own per-stage split (Result::times).
// Prints one JSON object: every time in ms, the medians, the stage medians and the detections.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pre/letterbox.hpp"
#include "yolo12/yolo12.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: yolo12-cpu-bench MODEL.y12 --image RAW W H [--size 640] [--rect] [--threads 2] "
               "[--runs 20] [--warmup 3]\n",
               msg);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, raw_path;
  int width = 0, height = 0, size = 640, threads = 2, runs = 20, warmup = 3;
  bool rect = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next_int = [&](int& dst) {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      dst = std::atoi(argv[++i]);
    };
    try {
      if (a == "--image") {
        if (i + 3 >= argc) return usage("--image takes RAW W H");
        raw_path = argv[++i];
        width = std::atoi(argv[++i]);
        height = std::atoi(argv[++i]);
      } else if (a == "--size") next_int(size);
      else if (a == "--threads") next_int(threads);
      else if (a == "--runs") next_int(runs);
      else if (a == "--warmup") next_int(warmup);
      else if (a == "--rect") rect = true;
      else if (!a.empty() && a[0] == '-') return usage(("unknown option " + a).c_str());
      else model = a;
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (model.empty() || raw_path.empty() || width < 1 || height < 1 || runs < 1 || warmup < 0)
    return usage("a model, --image RAW W H and positive counts are required");

  try {
    std::vector<std::uint8_t> bgr(static_cast<std::size_t>(width) * height * 3);  // (H, W, 3)
    std::ifstream in(raw_path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(bgr.data()), static_cast<std::streamsize>(bgr.size())))
      return usage(("cannot read " + std::to_string(bgr.size()) + " bytes from " + raw_path).c_str());
    const yolo12::ImageView view{bgr.data(), width, height, static_cast<std::size_t>(width) * 3,
                                 yolo12::PixelFormat::BGR8};

    yolo12::DetectorOptions opt;
    opt.device = yolo12::Device::Cpu;
    opt.input_height = opt.input_width = size;
    opt.rect = rect;
    opt.cpu_threads = threads;
    yolo12::Detector det(model, opt);

    // The network's input: the image letterboxed to size x size (fixed), as Ultralytics' forward gets.
    const auto p = yolo12::pre::letterbox_params(width, height, size, size, false);
    std::vector<float> x(3 * static_cast<std::size_t>(size) * size);  // (1, 3, size, size)
    yolo12::pre::letterbox_to_nchw(view, p, x.data());

    nlohmann::json out;
    std::vector<double> forward, e2e, pre, inf, post;
    int channels = 0, anchors = 0;
    for (int i = 0; i < warmup + runs; ++i) {
      const auto t0 = Clock::now();
      det.forward_raw(x.data(), 1, size, size, &channels, &anchors);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (i >= warmup) forward.push_back(ms);
    }
    yolo12::Result last;
    for (int i = 0; i < warmup + runs; ++i) {
      const auto t0 = Clock::now();
      last = det.detect(view);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (i < warmup) continue;
      e2e.push_back(ms);
      pre.push_back(last.times.preprocess_ms);
      inf.push_back(last.times.inference_ms);
      post.push_back(last.times.postprocess_ms);
    }
    out["model"] = model;
    out["threads"] = threads;
    out["size"] = size;
    out["rect"] = rect;
    out["e2e_input"] = {last.input_height, last.input_width};
    out["forward_ms"] = forward;
    out["end_to_end_ms"] = e2e;
    out["median"] = {{"forward_ms", median(forward)},
                     {"end_to_end_ms", median(e2e)},
                     {"preprocess_ms", median(pre)},
                     {"inference_ms", median(inf)},
                     {"postprocess_ms", median(post)}};
    out["detections"] = last.detections.size();
    out["raw_shape"] = {1, channels, anchors};
    std::printf("%s\n", out.dump().c_str());
  } catch (const yolo12::Error& e) {
    std::fprintf(stderr, "yolo12-cpu-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
