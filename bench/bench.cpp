// bench/bench.cpp - yolo12-bench: latency and throughput of the CUDA executor, per stage.
//
//   yolo12-bench MODEL.y12 [--batch 1,32] [--precision fp16,fp32] [--size 640] [--image 1280x720]
//                [--iters 200] [--warmup 30] [--json out.json] [--profile-ops N]
//
// For every (precision, batch): builds one CUDA executor as a Detector's pipeline does
// (src/backends/cuda/executor.cuh), then measures with CUDA events after a warm-up, reporting medians
// and 90th percentiles:
//   network_graph  the network alone (letterboxed input already on the device) replayed as one CUDA
//                  graph: the figure comparable with PyTorch's "forward only" numbers
//                  (cuda::time_network, src/backends/cuda/profile.cuh);
//   stages         one full executor run on the images as detect() runs it (a single CUDA graph: H2D of
//                  the 8-bit images, letterbox, network, decode + NMS, D2H of the kept boxes), split by
//                  the events inside the graph into preprocess / network / postprocess;
//   end_to_end     the host's wall time of that run (packing the pinned staging block included).
//   --profile-ops N  also every network op timed alone (cuda::profile_network: events between the ops
//                  of one captured graph): the N slowest printed with their achieved bandwidth and
//                  FLOP rate, all in the JSON; then the roofline (bench/roofline.hpp: copy bandwidth
//                  and fp16 tensor-core peak measured here first): each op's floor, time / floor, the
//                  network's sums, the N largest gaps.
// Lab conv variants are chosen with the environment variable YOLO12_CONV_VARIANTS (src/backends/cuda/conv.cu).
// Throughput = batch / median time. The image is synthetic (no OpenCV): a gradient with noise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "backends/cuda/common.cuh"
#include "backends/cuda/executor.cuh"
#include "backends/cuda/profile.cuh"
#include "core/executor.hpp"
#include "graph/graph.hpp"
#include "model/model_file.hpp"
#include "pre/letterbox.hpp"
#include "roofline.hpp"

using namespace yolo12;

namespace {

struct Stats {
  double median = 0, p90 = 0, mean = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, static_cast<std::size_t>(v.size() * 0.9))];
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  return s;
}

nlohmann::json to_json(const Stats& s) { return {{"median_ms", s.median}, {"p90_ms", s.p90}, {"mean_ms", s.mean}}; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "%s\nusage: yolo12-bench MODEL.y12 [--batch 1,32] [--precision fp16,fp32] [--size 640] "
               "[--image WxH] [--iters N] [--warmup N] [--json FILE] [--profile-ops N]\n",
               msg);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("missing model");
  std::string model_path = argv[1], json_path;
  std::vector<int> batches = {1, 32};
  std::vector<std::string> precisions = {"fp16", "fp32"};
  int size = 640, iters = 200, warmup = 30, img_w = 1280, img_h = 720, profile_top = -1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--batch") {
      batches.clear();
      for (const auto& b : split(next(), ',')) batches.push_back(std::atoi(b.c_str()));
    } else if (a == "--precision") {
      precisions = split(next(), ',');
    } else if (a == "--size") {
      size = std::atoi(next().c_str());
    } else if (a == "--iters") {
      iters = std::atoi(next().c_str());
    } else if (a == "--warmup") {
      warmup = std::atoi(next().c_str());
    } else if (a == "--profile-ops") {
      profile_top = std::atoi(next().c_str());
    } else if (a == "--json") {
      json_path = next();
    } else if (a == "--image") {
      const auto wh = split(next(), 'x');
      if (wh.size() != 2) usage("--image wants WxH");
      img_w = std::atoi(wh[0].c_str());
      img_h = std::atoi(wh[1].c_str());
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (iters < 1 || warmup < 0 || size < 32 || img_w < 1 || img_h < 1) usage("bad numbers");

  try {
    YOLO12_CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    YOLO12_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    auto file = model::ModelFile::open(model_path);
    const graph::Graph g = cuda::network_graph(file->header(), size, size);  // as make_cuda_backend packs

    // A synthetic BGR frame.
    std::vector<std::uint8_t> frame(static_cast<std::size_t>(img_w) * img_h * 3);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> noise(0, 60);
    for (int y = 0; y < img_h; ++y)
      for (int x = 0; x < img_w; ++x)
        for (int c = 0; c < 3; ++c)
          frame[(static_cast<std::size_t>(y) * img_w + x) * 3 + c] =
              static_cast<std::uint8_t>((x * (c + 1) / 7 + y / 5 + noise(rng)) & 0xff);
    const ImageView view{frame.data(), img_w, img_h, static_cast<std::size_t>(img_w) * 3, PixelFormat::BGR8};

    nlohmann::json results = nlohmann::json::array();
    cudaStream_t stream;
    YOLO12_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    bench::Roofline roof;  // the ceilings of the per-op floors, measured once
    if (profile_top >= 0) {
      roof = bench::measure_roofline(stream);
      std::printf("%s\n", bench::describe(roof).c_str());
    }

    for (const std::string& prec : precisions) {
      const Precision precision = prec == "fp16" ? Precision::Fp16 : Precision::Fp32;
      auto weights = cuda::upload_weights(*file, g, precision, 0);
      for (int batch : batches) {
        ExecutorConfig cfg;
        cfg.input_h = cfg.input_w = size;
        cfg.max_batch = batch;
        cfg.precision = precision;
        auto ex = cuda::make_executor(weights, *file, cfg, stream);
        std::vector<ImageView> images(static_cast<std::size_t>(batch), view);
        std::vector<pre::LetterboxParams> geo(static_cast<std::size_t>(batch),
                                              pre::letterbox_params(img_w, img_h, size, size, false));
        std::vector<std::vector<Detection>> dets(static_cast<std::size_t>(batch));
        StageTimes times;
        ExecutorRun run;
        run.batch = batch;
        run.images = images.data();
        run.geometry = geo.data();
        run.detections = dets.data();
        run.device_times = &times;

        // Network alone, as one graph (after one full run has put a letterboxed input in place).
        ex->run(run);
        const std::vector<double> net_ms = cuda::time_network(*ex, batch, warmup, iters);

        nlohmann::json ops = nlohmann::json::array();
        if (profile_top >= 0) {
          const std::vector<cuda::OpRecord> prof = cuda::profile_network(*ex, batch, warmup, iters);
          double total = 0;
          for (const auto& o : prof) total += o.median_ms;
          std::vector<std::size_t> order(prof.size());
          for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
          std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return prof[a].median_ms > prof[b].median_ms;
          });
          std::printf("per-op profile %s b%d: %zu ops, sum of medians %.3f ms (graph %.3f ms)\n", prec.c_str(), batch,
                      prof.size(), total, stats_of(net_ms).median);
          for (std::size_t r = 0; r < order.size() && static_cast<int>(r) < profile_top; ++r) {
            const auto& o = prof[order[r]];
            std::printf("  op %3zu %8.4f ms %5.1f%% %7.0f GB/s %7.1f TFLOP/s  %s\n", order[r], o.median_ms,
                        100.0 * o.median_ms / total, o.bytes / (o.median_ms * 1e6), o.flops / (o.median_ms * 1e9),
                        o.label.c_str());
          }
          std::vector<bench::OpCost> costs;
          for (std::size_t i = 0; i < prof.size(); ++i) {
            const double bytes = prof[i].bytes, flops = prof[i].flops;
            costs.push_back({prof[i].label, bytes, flops, prof[i].median_ms});
            ops.push_back({{"op", i}, {"label", prof[i].label}, {"median_ms", prof[i].median_ms},
                           {"bytes", prof[i].bytes}, {"flops", prof[i].flops}, {"floor_ms", roof.floor_ms(bytes, flops)},
                           {"bound", roof.bound(bytes, flops)}});
          }
          bench::print_op_roofline(stdout, roof, prec + " b" + std::to_string(batch), costs, profile_top);
        }

        // Full detect run, per stage and end to end.
        std::vector<double> pre_ms, mid_ms, post_ms, e2e_ms;
        std::size_t kept = 0;
        for (int i = 0; i < warmup + iters; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          ex->run(run);
          const auto t1 = std::chrono::steady_clock::now();
          if (i < warmup) continue;
          pre_ms.push_back(times.preprocess_ms);
          mid_ms.push_back(times.inference_ms);
          post_ms.push_back(times.postprocess_ms);
          e2e_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          kept = dets[0].size();
        }
        const Stats sn = stats_of(net_ms), sp = stats_of(pre_ms), sm = stats_of(mid_ms), sq = stats_of(post_ms),
                    se = stats_of(e2e_ms);
        const cuda::MemoryPlan& plan = ex->plan();
        nlohmann::json r = {
            {"precision", prec},
            {"batch", batch},
            {"input", {size, size}},
            {"image", {img_w, img_h}},
            {"network_graph", to_json(sn)},
            {"preprocess", to_json(sp)},
            {"network", to_json(sm)},
            {"postprocess", to_json(sq)},
            {"end_to_end", to_json(se)},
            {"network_img_per_s", batch * 1000.0 / sn.median},
            {"end_to_end_img_per_s", batch * 1000.0 / se.median},
            {"detections_image0", kept},
            {"ops", ops},
            {"memory_mib",
             {{"weights", plan.weights / 1048576.0},
              {"activations", plan.activations / 1048576.0},
              {"activations_naive", plan.activations_naive / 1048576.0},
              {"workspace", plan.workspace / 1048576.0}}}};
        results.push_back(r);
        std::printf("%s %-4s b%-3d net(graph) %8.3f ms p90 %8.3f | pre %7.3f net %8.3f post %7.3f | e2e %8.3f ms "
                    "| %8.0f img/s net, %8.0f img/s e2e | act %.1f MiB (naive %.1f)\n",
                    file->info().scale.c_str(), prec.c_str(), batch, sn.median, sn.p90, sp.median, sm.median, sq.median,
                    se.median, batch * 1000.0 / sn.median, batch * 1000.0 / se.median, plan.activations / 1048576.0,
                    plan.activations_naive / 1048576.0);
        std::fflush(stdout);
      }
    }
    nlohmann::json doc = {{"model", model_path},
                          {"family", file->info().family},
                          {"scale", file->info().scale},
                          {"device", prop.name},
                          {"iters", iters},
                          {"conv_variants", std::getenv("YOLO12_CONV_VARIANTS") ? std::getenv("YOLO12_CONV_VARIANTS") : ""},
                          {"warmup", warmup},
                          {"results", results}};
    if (profile_top >= 0)
      doc["roofline"] = {{"bandwidth_gbs", roof.bandwidth_gbs()}, {"copy_kernel_gbs", roof.copy_kernel_gbs},
                         {"memcpy_gbs", roof.memcpy_gbs},         {"copy_bytes", roof.copy_bytes},
                         {"fp16_tflops", roof.fp16_tflops()},     {"mma_sync_tflops", roof.mma_sync_tflops},
                         {"wgmma_tflops", roof.wgmma_tflops}};
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << doc.dump(1) << "\n";
    }
    cudaStreamDestroy(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yolo12-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
