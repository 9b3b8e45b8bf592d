// bench/multi_device_bench.cpp - yolo12-multi-bench: end-to-end throughput of one model spread over
// several devices through the public API (yolo12/devices.hpp), the way the CLI spreads batches.
//
//   yolo12-multi-bench MODEL.y12 [--devices 0 --devices 0,1 ...] [--batch 32] [--half]
//                      [--image 1280x720] [--seconds 5] [--warmup 2] [--input host|pinned|device]
//                      [--json out.json]
//
// For each device list: a DetectorPool, one worker thread per entry, each calling detect() on
// batches of `batch` synthetic BGR frames (random pixels, a fresh set per worker) as fast as it
// can, for --seconds after --warmup seconds. Reported: images/s over all workers (host wall time,
// everything detect() does included: packing, H2D, letterbox, network, NMS, D2H) and the scaling
// factor against the first list. Public API only, but for --input pinned / device (CUDA builds), where
// the frames are put in page-locked host memory or in device memory of the worker's GPU with the CUDA
// runtime first (as a decoder that hands over pinned or GPU frames would), which detect() then reads
// without the host copy (docs/api.md, "Images in pinned or device memory").
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if YOLO12_MULTI_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "yolo12/devices.hpp"
#include "yolo12/yolo12.hpp"

namespace {

struct Args {
  std::string model;
  std::vector<std::string> lists;
  int batch = 32;
  bool half = false;
  int width = 1280, height = 720;
  double seconds = 5, warmup = 2;
  std::string input = "host";
  std::string json;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "error: %s\nusage: yolo12-multi-bench MODEL.y12 [--devices LIST]... [--batch N] [--half] "
               "[--image WxH] [--seconds S] [--warmup S] [--input host|pinned|device] [--json FILE]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + k).c_str());
      return argv[++i];
    };
    if (k == "--devices") a.lists.push_back(value());
    else if (k == "--batch") a.batch = std::atoi(value().c_str());
    else if (k == "--half") a.half = true;
    else if (k == "--image") {
      const std::string v = value();
      if (std::sscanf(v.c_str(), "%dx%d", &a.width, &a.height) != 2) usage("--image wants WxH");
    } else if (k == "--seconds") a.seconds = std::atof(value().c_str());
    else if (k == "--warmup") a.warmup = std::atof(value().c_str());
    else if (k == "--json") a.json = value();
    else if (k == "--input") a.input = value();
    else if (!k.empty() && k[0] == '-') usage(("unknown option " + k).c_str());
    else if (a.model.empty()) a.model = k;
    else usage("one model only");
  }
  if (a.model.empty()) usage("no model");
  if (a.lists.empty()) a.lists = {"0"};
  if (a.batch < 1 || a.width < 1 || a.height < 1 || a.seconds <= 0 || a.warmup < 0) usage("impossible value");
  if (a.input != "host" && a.input != "pinned" && a.input != "device") usage("--input is host, pinned or device");
#if !YOLO12_MULTI_BENCH_CUDA
  if (a.input != "host") usage("--input pinned / device need a CUDA build");
#endif
  return a;
}

struct Row {
  std::string devices;
  std::size_t workers = 0;
  double images_per_s = 0;
  double ms_per_batch = 0;  // per worker, mean
};

Row run(const Args& a, const std::string& list) {
  yolo12::DetectorOptions opt;
  opt.max_batch = a.batch;
  opt.precision = a.half ? yolo12::Precision::Fp16 : yolo12::Precision::Fp32;
  yolo12::DetectorPool pool(a.model, opt, yolo12::parse_devices(list));
  const std::size_t n = pool.size();
  const std::size_t frame = static_cast<std::size_t>(a.width) * a.height * 3;
  std::vector<std::vector<std::uint8_t>> pixels(n, std::vector<std::uint8_t>(frame * a.batch));
  for (std::size_t w = 0; w < n; ++w) {
    std::mt19937 rng(static_cast<unsigned>(w + 1));
    for (auto& p : pixels[w]) p = static_cast<std::uint8_t>(rng() & 0xff);
  }
  // Where the frames live: each worker's pixels as generated (host), or copied once into pinned or
  // device memory (of the worker's own device) before the clock starts.
  std::vector<const std::uint8_t*> frames(n, nullptr);
  std::vector<void*> owned(n, nullptr);
  for (std::size_t w = 0; w < n; ++w) frames[w] = pixels[w].data();
#if YOLO12_MULTI_BENCH_CUDA
  struct Release {
    std::vector<void*>& p;
    bool device;
    ~Release() {
      for (void* q : p)
        if (q) device ? cudaFree(q) : cudaFreeHost(q);
    }
  } release{owned, a.input == "device"};
  for (std::size_t w = 0; w < n && a.input != "host"; ++w) {
    const std::size_t bytes = pixels[w].size();
    if (a.input == "pinned") {
      if (cudaMallocHost(&owned[w], bytes) != cudaSuccess) throw yolo12::Error("cudaMallocHost failed");
      std::memcpy(owned[w], pixels[w].data(), bytes);
    } else {
      const std::string dev = pool[w].device_name();  // "cuda:N"
      if (dev.rfind("cuda:", 0) != 0) throw yolo12::Error("--input device needs CUDA entries, got " + dev);
      if (cudaSetDevice(std::atoi(dev.c_str() + 5)) != cudaSuccess || cudaMalloc(&owned[w], bytes) != cudaSuccess ||
          cudaMemcpy(owned[w], pixels[w].data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        throw yolo12::Error("cannot put the frames in the memory of " + dev);
    }
    frames[w] = static_cast<const std::uint8_t*>(owned[w]);
  }
#endif
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<long long> batches(n, 0);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < n; ++w)
    threads.emplace_back([&, w] {
      std::vector<yolo12::ImageView> views;
      for (int b = 0; b < a.batch; ++b)
        views.push_back({frames[w] + frame * b, a.width, a.height, static_cast<std::size_t>(a.width) * 3,
                         yolo12::PixelFormat::BGR8});
      while (!stop.load()) {
        pool[w].detect(views);
        if (measuring.load()) ++batches[w];
      }
    });
  using Clock = std::chrono::steady_clock;
  std::this_thread::sleep_for(std::chrono::duration<double>(a.warmup));
  measuring = true;
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(a.seconds));
  measuring = false;
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  Row r;
  r.devices = list;
  r.workers = n;
  long long total = 0;
  for (long long b : batches) total += b;
  r.images_per_s = static_cast<double>(total) * a.batch / s;
  r.ms_per_batch = total ? 1e3 * s * static_cast<double>(n) / static_cast<double>(total) : 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::vector<Row> rows;
  try {
    for (const std::string& list : a.lists) {
      rows.push_back(run(a, list));
      const Row& r = rows.back();
      std::printf("devices %-12s workers %zu  batch %d %s %dx%d %s: %9.1f img/s end to end (%.2f ms per batch per worker)"
                  "  scaling %.2fx\n",
                  r.devices.c_str(), r.workers, a.batch, a.half ? "fp16" : "fp32", a.width, a.height, a.input.c_str(), r.images_per_s,
                  r.ms_per_batch, rows.front().images_per_s > 0 ? r.images_per_s / rows.front().images_per_s : 0.0);
      std::fflush(stdout);
    }
  } catch (const yolo12::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << "{\"model\": \"" << a.model << "\", \"batch\": " << a.batch << ", \"precision\": \""
      << (a.half ? "fp16" : "fp32") << "\", \"image\": [" << a.width << ", " << a.height << "], \"input\": \""
      << a.input << "\", \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i)
      f << (i ? ", " : "") << "{\"devices\": \"" << rows[i].devices << "\", \"workers\": " << rows[i].workers
        << ", \"images_per_s\": " << rows[i].images_per_s << ", \"scaling\": "
        << (rows[0].images_per_s > 0 ? rows[i].images_per_s / rows[0].images_per_s : 0) << "}";
    f << "]}\n";
    if (!f) {
      std::fprintf(stderr, "error: cannot write %s\n", a.json.c_str());
      return 1;
    }
  }
  return 0;
}
