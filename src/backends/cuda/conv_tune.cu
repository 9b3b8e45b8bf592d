// src/backends/cuda/conv_tune.cu - kernel tuning for convolutions: the plans that can run a conv, and the
// choice of the fastest by timing them on the conv's own buffers (conv.cuh: conv_candidates, conv_tune).
//
// conv_select picks a kernel and a tile from rules measured on one GPU (H200) for yolo12's shapes. The
// rules are coarse: the same 128x64 tile for a 1x1 conv that moves 180 MB and for a 3x3 conv that is
// mostly arithmetic. Tuning runs every candidate a few times and keeps the fastest, once per conv and
// batch, when the executor is asked to (ExecutorConfig::tune_kernels, YOLO12_CONV_TUNE=1). Every
// candidate computes the same conv: the tests run each one against the reference (test_conv, [tune]).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/tune_cache.hpp"
#include "yolo12/errors.hpp"

#include "common.cuh"
#include "conv.cuh"
#include "conv_detail.cuh"
#include "conv_gemm.cuh"
#include "conv_stem.cuh"

namespace yolo12::cuda {

namespace {

void add_plan(std::vector<ConvPlan>& out, const ConvPlan& plan) {
  for (const ConvPlan& q : out)
    if (q == plan) return;
  out.push_back(plan);
}

// Two events, released on every way out.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    YOLO12_CUDA_CHECK(cudaEventCreate(&start));
    YOLO12_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

constexpr int kLaunchesPerRun = 5;
constexpr int kRuns = 3;

// YOLO12_CONV_TUNE_QUICK=1: each candidate runs once after its warm-up (one run of one launch), for runs
// whose timings mean nothing anyway (under compute-sanitizer, where a kernel launch is a thousand times
// slower: the whole-model test's tuned detector then finishes); "0" or unset: the full protocol.
bool tune_quick() {
  static const bool quick = env_switch("YOLO12_CONV_TUNE_QUICK");
  return quick;
}
// YOLO12_CONV_TUNE_LOG=1: conv_tune writes every candidate's time to stderr, one line per conv ("tune <key>:
// <plan> <ms>; ..." in candidate order, the first being conv_select's), for fitting the selection rules to
// measurements; "0" or unset: nothing.
bool tune_log() {
  static const bool log = env_switch("YOLO12_CONV_TUNE_LOG");
  return log;
}
constexpr double kKeepDefaultWithin = 1.03;  // conv_select's plan stays unless another is 3% faster
constexpr float kGiveUpAbove = 1.5f;         // a candidate 1.5x slower than the fastest yet gets one run

}  // namespace

template <typename T>
std::vector<ConvPlan> conv_candidates(const ConvParams<T>& p) {
  std::vector<ConvPlan> out{conv_select(p)};
  if constexpr (std::is_same_v<T, __half>) {
    if (out[0].algorithm == ConvAlgorithm::direct_naive) return out;  // unaligned weights: nothing else runs
    if (conv_detail::is_depthwise(p)) {
      ConvPlan plan;
      if (conv_detail::dwconv_direct_supports(p)) {
        plan.algorithm = ConvAlgorithm::dwconv_direct;
        add_plan(out, plan);
      }
      if (conv_detail::dwconv_tiled_f16_supports(p)) {
        plan.algorithm = ConvAlgorithm::dwconv_tiled_f16;
        add_plan(out, plan);
      }
      if (conv_detail::dwconv_rows_f16_supports(p)) {  // each channel count per block
        plan.algorithm = ConvAlgorithm::dwconv_rows_f16;
        for (const int channels : {32, 16, 8}) {
          plan.bn = channels;
          add_plan(out, plan);
        }
      }
      return out;
    }
    for (const ConvPlan& plan : conv_detail::implicit_gemm_candidates(p)) add_plan(out, plan);
    if (conv_detail::wgmma_runs(p))
      for (const ConvPlan& plan : conv_detail::wgmma_candidates(p)) add_plan(out, plan);
    if (conv_detail::halo_runs(p)) {
      const ConvPlan halo = conv_detail::halo_plan(p, device_info());
      if (halo.algorithm == ConvAlgorithm::halo_f16) add_plan(out, halo);
    }
    if (conv_detail::halo_wgmma_enabled(p, conv_detail::conv_variants()) && conv_detail::halo_wgmma_runs(p))
      for (const ConvPlan& plan : conv_detail::halo_wgmma_candidates(p)) add_plan(out, plan);
    if (conv_detail::conv_variants().f16_gemm_tma && conv_detail::gemm_tma_runs(p))
      for (const ConvPlan& plan : conv_detail::gemm_tma_candidates(p)) add_plan(out, plan);
    for (const int warps : {4, 8}) {
      const ConvPlan narrow = conv_detail::narrow_plan(p, device_info(), warps);
      if (narrow.algorithm == ConvAlgorithm::narrow_f16) add_plan(out, narrow);
    }
    if (conv_detail::conv2d_direct_small_cin_supports(p)) {
      ConvPlan plan;
      plan.algorithm = ConvAlgorithm::direct_small_cin;
      add_plan(out, plan);
    }
    if (conv_detail::conv2d_stem_f16_supports(p)) {
      ConvPlan plan;
      plan.algorithm = ConvAlgorithm::stem_f16;
      add_plan(out, plan);
    }
    if (conv_detail::conv_variants().f16_stem_mma && conv_detail::stem_mma_supports(p)) {
      ConvPlan plan;
      plan.algorithm = ConvAlgorithm::stem_mma;
      add_plan(out, plan);
    }
  }
  return out;
}
template std::vector<ConvPlan> conv_candidates<float>(const ConvParams<float>&);
template std::vector<ConvPlan> conv_candidates<__half>(const ConvParams<__half>&);

template <typename T>
ConvPlan conv_tune(const ConvParams<T>& p, cudaStream_t stream) {
  const std::vector<ConvPlan> plans = conv_candidates(p);
  if (plans.size() == 1) return plans[0];
  std::vector<float> best(plans.size(), 0.f);  // ms per launch
  float fastest_so_far = 0.f;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    best[i] = tune_time([&](cudaStream_t s) { conv2d_forward(p, plans[i], s); }, stream,
                        i > 0 ? kGiveUpAbove * fastest_so_far : 0.f);
    fastest_so_far = i == 0 ? best[0] : std::min(fastest_so_far, best[i]);
  }
  const std::size_t fastest = static_cast<std::size_t>(std::min_element(best.begin(), best.end()) - best.begin());
  if (tune_log()) {
    std::ostringstream line;
    line << "tune " << conv_tune_key(p) << ":";
    for (std::size_t i = 0; i < plans.size(); ++i)
      line << (i ? "; " : " ") << conv_plan_detail(plans[i]) << " " << best[i];
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }
  return best[0] <= kKeepDefaultWithin * best[fastest] ? plans[0] : plans[fastest];
}
template ConvPlan conv_tune<float>(const ConvParams<float>&, cudaStream_t);
template ConvPlan conv_tune<__half>(const ConvParams<__half>&, cudaStream_t);

float tune_time(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream, float give_up_above) {
  EventPair ev;
  const int runs = tune_quick() ? 1 : kRuns, launches = tune_quick() ? 1 : kLaunchesPerRun;
  launch(stream);  // warm-up: instruction cache, shared-memory opt-in, L2
  float best = 0.f;
  for (int r = 0; r < runs; ++r) {
    YOLO12_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    for (int l = 0; l < launches; ++l) launch(stream);
    YOLO12_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    YOLO12_CUDA_CHECK(cudaEventSynchronize(ev.stop));
    float ms = 0.f;
    YOLO12_CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    best = r == 0 ? ms / launches : std::min(best, ms / launches);
    if (give_up_above > 0.f && best > give_up_above) break;  // clearly slower: no more runs
  }
  return best;
}

bool tune_log_enabled() { return tune_log(); }

std::string conv_plan_encode(const ConvPlan& plan) {
  std::ostringstream s;
  s << static_cast<int>(plan.algorithm) << ' ' << plan.bm << ' ' << plan.bn << ' ' << plan.bk << ' ' << plan.split << ' '
    << plan.stages << ' ' << plan.warps;
  if (plan.pingpong) s << " 1";
  return s.str();
}

bool conv_plan_decode(const std::string& text, ConvPlan& plan) {
  std::istringstream s(text);
  int algorithm = -1;
  ConvPlan q;
  if (!(s >> algorithm >> q.bm >> q.bn >> q.bk >> q.split >> q.stages >> q.warps)) return false;
  std::string rest;
  if (s >> rest) {  // the optional pingpong field, then nothing
    if (rest != "0" && rest != "1") return false;
    q.pingpong = rest == "1";
    if (s >> rest) return false;
  }
  if (algorithm < static_cast<int>(ConvAlgorithm::direct_naive) ||
      algorithm > static_cast<int>(kLastConvAlgorithm))
    return false;
  q.algorithm = static_cast<ConvAlgorithm>(algorithm);
  plan = q;
  return true;
}

template <typename T>
std::string conv_tune_key(const ConvParams<T>& p) {
  const auto a16 = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 ? 1 : 0; };
  std::ostringstream s;
  s << "conv " << (std::is_same_v<T, __half> ? "f16" : "f32") << " c" << p.c_in << "-" << p.c_out << " k" << p.k
    << " s" << p.stride << " p" << p.pad << " g" << p.groups << " d" << p.dilation << " a" << static_cast<int>(p.act)
    << " " << p.h << "x" << p.w_in << "-" << p.ho << "x" << p.wo << " b" << p.batch << " ld" << p.ldx << "," << p.ldy
    << "," << (p.residual ? p.ldr : 0) << (p.gamma ? " gamma" : "") << " al" << a16(p.x) << a16(p.w) << a16(p.y)
    << (p.residual ? a16(p.residual) : 1);
  return s.str();
}
template std::string conv_tune_key<float>(const ConvParams<float>&);
template std::string conv_tune_key<__half>(const ConvParams<__half>&);

template <typename T>
ConvPlan conv_tune_cached(const ConvParams<T>& p, cudaStream_t stream, TuneCache& cache, bool* from_cache) {
  const std::string key = conv_tune_key(p);
  if (const std::string* text = cache.find(key)) {
    ConvPlan cached;
    if (conv_plan_decode(*text, cached))
      for (const ConvPlan& plan : conv_candidates(p))
        if (plan == cached) {  // the candidate itself, with its smem_bytes
          if (from_cache) *from_cache = true;
          return plan;
        }
  }
  const ConvPlan plan = conv_tune(p, stream);
  cache.put(key, conv_plan_encode(plan));
  if (from_cache) *from_cache = false;
  return plan;
}
template ConvPlan conv_tune_cached<float>(const ConvParams<float>&, cudaStream_t, TuneCache&, bool*);
template ConvPlan conv_tune_cached<__half>(const ConvParams<__half>&, cudaStream_t, TuneCache&, bool*);

}  // namespace yolo12::cuda
