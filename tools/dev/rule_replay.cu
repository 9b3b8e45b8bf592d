// tools/dev/rule_replay.cu - what the conv selection rules would cost on a GPU, replayed on any machine from kernel
// tuning's log: for every `tune <key>: <plan> <ms>; ...` line (YOLO12_CONV_TUNE_LOG=1, conv_tune.cu) the conv is
// rebuilt from its key, conv_select picks a plan under the YOLO12_CONV_VARIANTS of this run (as on an sm_90a device
// with the H200's facts where no GPU answers: plan_without_device_as_sm90a), and that plan's logged time is looked
// up among the line's candidates. Per batch size it prints the sum over convs of the logged rule's plans (each line's
// first), of the replayed rule's, and of the fastest, then the convs where the replayed rule differs from the logged
// one or loses most to the fastest. So a change of the rules can be fitted and checked against a GPU's measurements
// before the GPU is asked again (docs/kernels-conv.md, "The eighteenth session").
//
//   [YOLO12_CONV_VARIANTS=...] BUILD/yolo12-rule-replay LOG [--top N]
// (built with the CUDA backend, beside yolo12-bench; tests/python/test_rule_replay.py runs it on a made-up log).
//
// A plan the log has no time for (a candidate tuning did not offer then) is counted at the logged rule's time and
// listed as "untimed". Only fp16 convs are replayed (the f16 keys). Reads nothing but the log.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_detail.cuh"

namespace {

using yolo12::cuda::ConvParams;
using yolo12::cuda::ConvPlan;

struct Line {
  std::string key;
  int batch = 0;
  std::vector<std::pair<std::string, double>> plans;  // name, ms; the first is the logged rule's
};

bool parse_line(const std::string& text, Line& line) {
  if (text.rfind("tune conv f16 ", 0) != 0) return false;
  const std::size_t colon = text.find(": ");
  if (colon == std::string::npos) return false;
  line.key = text.substr(5, colon - 5);
  std::string rest = text.substr(colon + 2);
  line.plans.clear();
  std::size_t begin = 0;
  while (begin < rest.size()) {
    std::size_t end = rest.find("; ", begin);
    if (end == std::string::npos) end = rest.size();
    const std::string entry = rest.substr(begin, end - begin);
    const std::size_t space = entry.rfind(' ');
    if (space == std::string::npos) return false;
    char* stop = nullptr;
    const double ms = std::strtod(entry.c_str() + space + 1, &stop);
    if (stop == entry.c_str() + space + 1) return false;
    line.plans.emplace_back(entry.substr(0, space), ms);
    begin = end + 2;
  }
  return !line.plans.empty();
}

// The conv of a tune key (conv_tune_key): its shape, views and alignments, with made-up pointers of those
// alignments (the rules read the addresses' alignment only).
bool conv_of(const std::string& key, ConvParams<__half>& p) {
  int act = 0, ldr = 0;
  char al[8] = {0};
  if (std::sscanf(key.c_str(), "conv f16 c%d-%d k%d s%d p%d g%d d%d a%d %dx%d-%dx%d b%d ld%d,%d,%d", &p.c_in, &p.c_out,
                  &p.k, &p.stride, &p.pad, &p.groups, &p.dilation, &act, &p.h, &p.w_in, &p.ho, &p.wo, &p.batch,
                  &p.ldx, &p.ldy, &ldr) != 16)
    return false;
  const std::size_t a = key.rfind(" al");
  if (a == std::string::npos || key.size() < a + 7) return false;
  for (int i = 0; i < 4; ++i) al[i] = key[a + 3 + i];
  p.act = static_cast<yolo12::graph::Act>(act);
  alignas(256) static __half arena[64];
  static float floats[2];
  const auto at = [](char aligned) { return aligned == '1' ? arena : arena + 1; };  // 16-byte aligned or 2-byte
  p.x = at(al[0]);
  p.w = at(al[1]);
  p.y = at(al[2]);
  p.bias = floats;
  p.gamma = key.find(" gamma") != std::string::npos ? floats : nullptr;
  p.ldr = ldr;
  p.residual = ldr > 0 ? at(al[3]) : nullptr;
  return true;
}

struct Sums {
  double logged = 0, replayed = 0, fastest = 0;
  int convs = 0, changed = 0, untimed = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s TUNE_LOG [--top N]\n", argv[0]);
    return 2;
  }
  int top = 30;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--top") top = std::atoi(argv[i + 1]);
  yolo12::cuda::conv_detail::plan_without_device_as_sm90a() = true;
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", argv[1]);
    return 1;
  }
  std::map<int, Sums> sums;
  struct Diff {
    double loss;  // replayed - fastest
    double gain;  // logged - replayed
    bool changed; // the replayed plan is not the logged one
    std::string text;
  };
  std::map<int, std::vector<Diff>> diffs;
  std::string text;
  Line line;
  while (std::getline(in, text)) {
    if (!parse_line(text, line)) continue;
    ConvParams<__half> p;
    if (!conv_of(line.key, p)) {
      std::fprintf(stderr, "skipped (key not understood): %s\n", line.key.c_str());
      continue;
    }
    const ConvPlan plan = yolo12::cuda::conv_select(p);
    const std::string name = yolo12::cuda::conv_plan_detail(plan);
    const double logged = line.plans[0].second;
    double fastest = logged, replayed = -1;
    std::string fastest_name = line.plans[0].first;
    for (const auto& [n, ms] : line.plans) {
      if (ms < fastest) fastest = ms, fastest_name = n;
      if (n == name && replayed < 0) replayed = ms;
    }
    const int batch = p.batch;
    Sums& s = sums[batch];
    const bool untimed = replayed < 0;
    if (untimed) replayed = logged;
    s.logged += logged;
    s.replayed += replayed;
    s.fastest += fastest;
    ++s.convs;
    s.untimed += untimed;
    const bool changed = name != line.plans[0].first;
    s.changed += changed;
    std::ostringstream d;
    d.setf(std::ios::fixed);
    d.precision(4);
    d << line.key << ": " << (changed ? "logged " + line.plans[0].first + " " : "") << "replayed " << name << " "
      << replayed << (untimed ? " (untimed)" : "") << ", fastest " << fastest_name << " " << fastest;
    diffs[batch].push_back({replayed - fastest, logged - replayed, changed, d.str()});
  }
  for (auto& [batch, s] : sums) {
    std::printf("batch %d: %d convs; the logged rule %.3f ms, the replayed rule %.3f ms (%+.3f), the fastest %.3f ms; "
                "%d plans changed, %d untimed\n",
                batch, s.convs, s.logged, s.replayed, s.replayed - s.logged, s.fastest, s.changed, s.untimed);
    auto& list = diffs[batch];
    std::sort(list.begin(), list.end(), [](const Diff& a, const Diff& b) { return a.gain < b.gain; });
    std::printf("  changed plans, the largest loss first (logged - replayed ms):\n");
    for (const Diff& d : list)
      if (d.changed) std::printf("    %+.4f  %s\n", d.gain, d.text.c_str());
    std::sort(list.begin(), list.end(), [](const Diff& a, const Diff& b) { return a.loss > b.loss; });
    std::printf("  the replayed rule against the fastest, the largest loss first:\n");
    for (int i = 0; i < static_cast<int>(list.size()) && i < top; ++i)
      std::printf("    %+.4f  %s\n", -list[i].loss, list[i].text.c_str());
  }
  return 0;
}
