// tests/gpu/test_dw_branch.cu - conv2d_dw_branch_f16 (src/backends/cuda/conv_dw_branch.cuh), the Detect head's class
// branch (depthwise 3x3, 1x1, depthwise 3x3, 1x1, 1x1) in one kernel, launched directly:
// - against the double reference of the five convs (tests/ops: conv_reference), each map rounded to fp16 between them
//   as the kernel keeps it. Bound: rel L2 at most twice that of a naive fp16 implementation (the reference's output
//   rounded to half), as test_conv's fp16 bound;
// - against the five convs on the kernels the executor would pick (conv2d_forward each): the same bound;
// - every output element is poisoned with NaN first and must be written; every element outside the output's channel
//   slice keeps its guard value bit for bit;
// - shapes: yolo12n's P3 and P4 branches (64 / 128 -> 80 -> 80 classes) and yolo12s's P3 (128 -> 128 -> 80), partial
//   tiles at the right and bottom edges, maps smaller than a tile, class counts that are not a multiple of 8 (scalar
//   stores) or 16 (zero weight rows), input and output slices, SiLU on the last link, a persistent grid of a few
//   blocks (each walks many tiles), batch > 1;
// - the branches and views it refuses: false / yolo12::Error;
// - [host] dw_branch_preferred, the rule without tuning, on yolo12n's and yolo12s's branches (also without a GPU);
// - [model]: under the conv variant f16_dw_branch the whole model (the yolo12n and narrow yolo12l fixtures) with the
//   branches fused and forced onto the kernel (YOLO12_CHAIN_RUN=fused; at the fixtures' batch 1 the rule keeps the
//   five convs), plain and tuned, within the fp16 bound against Ultralytics, and yolo12n's branches on the kernel
//   (YOLO12_TEST_VARIANT_PARTS picks parts: model_fixtures.hpp).
// [.bench] (not run by default): yolo12n's and yolo12s's P3 branch at a 640x640 input, batch 1 and 32, timed with CUDA
// events (median of 50 after 5 warm-up runs), against the five convs; the floor from bytes at 3.0 TB/s.
#include "catch.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_detail.cuh"
#include "backends/cuda/conv_dw_branch.cuh"
#include "backends/cuda/dw_branch_layout.hpp"
#include "backends/cuda/executor.cuh"
#include "kernel_test_support.cuh"
#include "model_fixtures.hpp"
#include "ops/op_suite.hpp"
#include "support.hpp"
#include "yolo12/errors.hpp"
#include "yolo12/yolo12.hpp"

using yolo12::cuda::ConvParams;
using yolo12::cuda::ConvShape;
using yolo12::test::DeviceArray;
using yolo12::test::median_ms;
using yolo12::test::VariantScope;
using yolo12::test::ops::round_half;
using yolo12::test::rel_l2;
namespace cd = yolo12::cuda::conv_detail;
namespace ops = yolo12::test::ops;

namespace {

constexpr int kLinks = cd::kDwBranchLinks;

ConvShape link_shape(int batch, int h, int w, int c_in, int c_out, bool depthwise, bool silu) {
  ConvShape s;
  s.batch = batch;
  s.h = h;
  s.w_in = w;
  s.c_in = c_in;
  s.c_out = c_out;
  s.k = depthwise ? 3 : 1;
  s.stride = 1;
  s.pad = depthwise ? 1 : 0;
  s.groups = depthwise ? c_in : 1;
  s.act = silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  s.ho = h;
  s.wo = w;
  return s;
}

struct BranchCase {
  int batch = 1, h = 0, w = 0, c0 = 64, c1 = 80, c2 = 80, c3 = 80;
  bool silu_last = false;     // Detect's last conv has none
  int x_c0 = 0, x_extra = 0;  // the input slice: ldx = x_c0 + c0 + x_extra (x_c0 and ldx multiples of 8)
  int y_c0 = 0, y_extra = 0;  // the output slice
  int max_grid = 0;
  int ldx() const { return x_c0 + c0 + x_extra; }
  int ldy() const { return y_c0 + c3 + y_extra; }
  std::string describe() const {
    return "b" + std::to_string(batch) + " " + std::to_string(h) + "x" + std::to_string(w) + " " +
           std::to_string(c0) + "->" + std::to_string(c1) + "->" + std::to_string(c2) + "->" + std::to_string(c3) +
           (silu_last ? " SiLU last" : "") + " ldx " + std::to_string(ldx()) + " ldy " + std::to_string(ldy()) +
           " y_c0 " + std::to_string(y_c0) + (max_grid ? " grid " + std::to_string(max_grid) : "");
  }
};

std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
  return h;
}

// The case's host data and device buffers, packed as the executor packs them; maps[i] is link i's output where the
// links run one by one (maps[4] unused: the last link writes y).
struct BranchRun {
  BranchCase c;
  ConvShape s[kLinks];
  std::size_t pixels;
  std::vector<float> x, w[kLinks], b[kLinks];  // x already fp16 values; w: (c_out, c_in / groups, k, k)
  DeviceArray<__half> dx, dy;
  std::vector<DeviceArray<__half>*> dw, maps;
  std::vector<DeviceArray<float>*> db;

  BranchRun(const BranchCase& bc, std::uint64_t seed)
      : c(bc), pixels(static_cast<std::size_t>(bc.batch) * bc.h * bc.w), dx(pixels * bc.ldx()),
        dy(pixels * bc.ldy()) {
    s[0] = link_shape(c.batch, c.h, c.w, c.c0, c.c0, true, true);
    s[1] = link_shape(c.batch, c.h, c.w, c.c0, c.c1, false, true);
    s[2] = link_shape(c.batch, c.h, c.w, c.c1, c.c1, true, true);
    s[3] = link_shape(c.batch, c.h, c.w, c.c1, c.c2, false, true);
    s[4] = link_shape(c.batch, c.h, c.w, c.c2, c.c3, false, c.silu_last);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    const auto values = [&](std::size_t n, float scale) {
      std::vector<float> v(n);
      for (auto& e : v) e = round_half(uni(rng) * scale);
      return v;
    };
    x = values(pixels * c.ldx(), 1.f);
    dx.upload(to_half(x));
    for (int i = 0; i < kLinks; ++i) {
      const int fan_in = s[i].c_in / s[i].groups * s[i].k * s[i].k;
      // The last link's weights larger: its output must not be near zero (fp16_bound refuses such a reference), also
      // for a single class.
      const float gain = i == kLinks - 1 ? 5.f : 1.7f;
      w[i] = values(static_cast<std::size_t>(s[i].c_out) * fan_in, gain / std::sqrt(static_cast<float>(fan_in)));
      b[i] = values(s[i].c_out, 0.5f);
      std::vector<__half> packed(yolo12::cuda::conv_packed_weight_elems(s[i]));
      yolo12::cuda::conv_pack_weights<__half>(s[i], w[i].data(), packed.data());
      dw.push_back(new DeviceArray<__half>(packed.size()));
      dw.back()->upload(packed);
      db.push_back(new DeviceArray<float>(b[i].size()));
      db.back()->upload(b[i]);
      maps.push_back(new DeviceArray<__half>(pixels * s[i].c_out));
    }
  }
  ~BranchRun() {
    for (auto* p : dw) delete p;
    for (auto* p : db) delete p;
    for (auto* p : maps) delete p;
  }
  BranchRun(const BranchRun&) = delete;
  BranchRun& operator=(const BranchRun&) = delete;
  // The five links' params: link 0 reads the input slice, link 4 writes the output slice; between them the maps
  // (which the fused kernel does not touch).
  void params(ConvParams<__half> (&p)[kLinks]) const {
    for (int i = 0; i < kLinks; ++i) {
      p[i] = ConvParams<__half>{};
      static_cast<ConvShape&>(p[i]) = s[i];
      p[i].x = i == 0 ? dx.p + c.x_c0 : maps[static_cast<std::size_t>(i - 1)]->p;
      p[i].ldx = i == 0 ? c.ldx() : s[i].c_in;
      p[i].w = dw[static_cast<std::size_t>(i)]->p;
      p[i].bias = db[static_cast<std::size_t>(i)]->p;
      p[i].y = i == kLinks - 1 ? dy.p + c.y_c0 : maps[static_cast<std::size_t>(i)]->p;
      p[i].ldy = i == kLinks - 1 ? c.ldy() : s[i].c_out;
    }
  }
  yolo12::test::OutputSlice out() const { return {dy.p, pixels, c.ldy(), c.y_c0, c.c3}; }
  // The double reference: each link in turn, its map rounded to half before the next reads it.
  std::vector<double> reference() const {
    std::vector<float> in(pixels * c.c0);
    for (std::size_t m = 0; m < pixels; ++m)
      for (int ch = 0; ch < c.c0; ++ch) in[m * c.c0 + ch] = x[m * c.ldx() + c.x_c0 + ch];
    std::vector<double> out;
    for (int i = 0; i < kLinks; ++i) {
      out.assign(pixels * s[i].c_out, 0.0);
      ops::conv_reference(s[i], ops::HostView{in.data(), s[i].c_in, 0, s[i].c_in, c.h, c.w, true}, w[i].data(),
                          b[i].data(), nullptr, ops::HostView{}, c.batch,
                          ops::RefOut{out.data(), s[i].c_out, 0, s[i].c_out, c.h, c.w, true});
      if (i + 1 < kLinks) {
        in.resize(out.size());
        for (std::size_t k = 0; k < out.size(); ++k) in[k] = round_half(static_cast<float>(out[k]));
      }
    }
    return out;
  }
};

void check_branch(const BranchCase& bc, std::uint64_t seed) {
  INFO(bc.describe());
  BranchRun run(bc, seed);
  ConvParams<__half> p[kLinks];
  run.params(p);
  REQUIRE(cd::dw_branch_supports(run.s));
  REQUIRE(cd::dw_branch_views_ok(p));
  const std::vector<double> ref = run.reference();
  const double bound = yolo12::test::fp16_bound(ref);

  run.out().poison();
  cd::launch_conv2d_dw_branch_f16(p, nullptr, bc.max_grid);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  int unwritten = 0, guard_changed = 0;
  const std::vector<double> fused = run.out().read(unwritten, guard_changed);
  CHECK(unwritten == 0);
  CHECK(guard_changed == 0);
  REQUIRE(fused.size() == ref.size());
  const double err = rel_l2(fused, ref);
  INFO("fused: rel L2 " << err << ", bound " << bound);
  CHECK(err <= bound);

  // The five convs the branch replaces, on the same buffers.
  run.out().poison();
  for (const ConvParams<__half>& l : p) yolo12::cuda::conv2d_forward<__half>(l, nullptr);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<double> links = run.out().read(unwritten, guard_changed);
  INFO("five convs: rel L2 " << rel_l2(links, ref));
  CHECK(rel_l2(links, ref) <= bound);
  CHECK(rel_l2(fused, links) <= bound);
}

}  // namespace

TEST_CASE("conv2d_dw_branch_f16 matches the reference of the five convs and the five convs' kernels",
          "[dw_branch][kernel]") {
  std::vector<BranchCase> cases;
  const auto add = [&](int b, int h, int w, int c0, int c1, int c2, int c3) {
    BranchCase c;
    c.batch = b;
    c.h = h;
    c.w = w;
    c.c0 = c0;
    c.c1 = c1;
    c.c2 = c2;
    c.c3 = c3;
    cases.push_back(c);
    return &cases.back();
  };
  add(1, 80, 80, 64, 80, 80, 80);                // yolo12n's P3 branch at 640
  add(2, 40, 40, 128, 80, 80, 80);               // yolo12n's P4, batch 2
  add(1, 48, 32, 128, 128, 128, 80);             // yolo12s's P3 kind (the largest layout)
  add(1, 37, 53, 64, 80, 80, 80);                // partial tiles both ways
  add(3, 5, 7, 32, 48, 16, 8);                   // smaller than a tile, batch 3
  add(1, 20, 18, 16, 32, 32, 1);                 // one class: scalar stores
  add(2, 13, 29, 64, 64, 96, 20)->max_grid = 3;  // 20 classes (16-byte rows, a zero half chunk), 3 blocks walk
  BranchCase* c = add(1, 27, 41, 48, 64, 64, 13);  // 13 classes; slices of the input and the output
  c->x_c0 = 8;
  c->x_extra = 16;
  c->y_c0 = 3;
  c->y_extra = 5;
  c = add(1, 24, 40, 64, 80, 80, 80);              // an output slice that keeps 16-byte stores
  c->y_c0 = 64;
  c->silu_last = true;
  add(1, 160, 160, 16, 16, 16, 16)->max_grid = 5;  // many tiles per block
  std::uint64_t seed = 3000;
  for (const BranchCase& bc : cases) check_branch(bc, ++seed);
}

TEST_CASE("conv2d_dw_branch_f16 refuses the branches and views it does not take", "[dw_branch][kernel]") {
  BranchCase bc;
  bc.h = bc.w = 16;
  BranchRun run(bc, 7);
  ConvParams<__half> p[kLinks];
  run.params(p);
  CHECK(cd::dw_branch_supports(run.s));
  CHECK(cd::dw_branch_views_ok(p));
  CHECK(cd::dw_branch_channels(64, 80, 80, 80));
  CHECK(cd::dw_branch_channels(128, 128, 128, 80));
  CHECK_FALSE(cd::dw_branch_channels(256, 80, 80, 80));  // over 128 channels
  CHECK_FALSE(cd::dw_branch_channels(72, 80, 80, 80));   // not a multiple of 16
  CHECK_FALSE(cd::dw_branch_channels(64, 80, 80, 129));  // over 128 classes
  ConvShape s[kLinks];
  for (int i = 0; i < kLinks; ++i) s[i] = run.s[i];
  s[2].k = 5;  // a 5x5 depthwise link
  s[2].pad = 2;
  CHECK_FALSE(cd::dw_branch_supports(s));
  for (int i = 0; i < kLinks; ++i) s[i] = run.s[i];
  s[3].w_in += 1;  // not the same map
  CHECK_FALSE(cd::dw_branch_supports(s));
  ConvParams<__half> q[kLinks];
  run.params(q);
  q[1].gamma = q[1].bias;  // a gamma
  CHECK_FALSE(cd::dw_branch_views_ok(q));
  CHECK_THROWS_AS(cd::launch_conv2d_dw_branch_f16(q, nullptr), yolo12::Error);
  run.params(q);
  q[0].x += 4;  // not 16-byte aligned
  CHECK_FALSE(cd::dw_branch_views_ok(q));
  CHECK_THROWS_AS(cd::launch_conv2d_dw_branch_f16(q, nullptr), yolo12::Error);
}

// The rule without tuning (host arithmetic on the device's facts; without a GPU, DeviceInfo's defaults, an H200's):
// yolo12n's P3 branch at batch 16 and 32, not at batch 1 or 8; yolo12s's P3 (one block per SM) at batch 32; yolo12n's
// P4 (480 tiles at batch 32) never. Also run where no GPU is (test_dw_branch_host, CI).
TEST_CASE("dw_branch_preferred: the kernel for the P3 branches on large batches only", "[dw_branch][host]") {
  ConvShape s[kLinks];
  const auto preferred = [&](int batch, int size, int c0, int c1) {
    s[0] = link_shape(batch, size, size, c0, c0, true, true);
    s[1] = link_shape(batch, size, size, c0, c1, false, true);
    s[2] = link_shape(batch, size, size, c1, c1, true, true);
    s[3] = link_shape(batch, size, size, c1, c1, false, true);
    s[4] = link_shape(batch, size, size, c1, 80, false, false);
    REQUIRE(cd::dw_branch_supports(s));
    return cd::dw_branch_preferred(s);
  };
  CHECK(preferred(32, 80, 64, 80));
  CHECK(preferred(16, 80, 64, 80));
  CHECK_FALSE(preferred(8, 80, 64, 80));
  CHECK_FALSE(preferred(1, 80, 64, 80));
  CHECK_FALSE(preferred(32, 40, 128, 80));
  CHECK(preferred(32, 80, 128, 128));
  CHECK(cd::dw_branch_channels(64, 80, 80, 80));
  CHECK_FALSE(cd::dw_branch_channels(256, 80, 80, 80));
}

TEST_CASE("conv2d_dw_branch_f16 against the five convs on yolo12n's and yolo12s's P3 branch (timing)",
          "[.bench][dw_branch]") {
  struct Kind {
    const char* name;
    int size, c0, c1, c3;
  };
  for (const Kind k : {Kind{"yolo12n P3", 80, 64, 80, 80}, Kind{"yolo12n P4", 40, 128, 80, 80},
                       Kind{"yolo12s P3", 80, 128, 128, 80}})
    for (int batch : {1, 32}) {
      BranchCase bc;
      bc.batch = batch;
      bc.h = bc.w = k.size;
      bc.c0 = k.c0;
      bc.c1 = bc.c2 = k.c1;
      bc.c3 = k.c3;
      BranchRun run(bc, 11);
      ConvParams<__half> p[kLinks];
      run.params(p);
      const float fused = median_ms([&] { cd::launch_conv2d_dw_branch_f16(p, nullptr); }, 50);
      const float links = median_ms([&] {
        for (const ConvParams<__half>& l : p) yolo12::cuda::conv2d_forward<__half>(l, nullptr);
      }, 50);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      const double bytes = 2.0 * run.pixels * (k.c0 + k.c3);  // input, output
      ConvShape s[kLinks];
      for (int i = 0; i < kLinks; ++i) s[i] = run.s[i];
      std::printf("dw_branch %s %d->%d->%d b%d %dx%d: fused %.4f ms, five convs %.4f ms, fused floor %.4f ms at 3.0 "
                  "TB/s, smem %d B, the rule takes %s\n",
                  k.name, k.c0, k.c1, k.c3, batch, k.size, k.size, fused, links, bytes / 3.0e9,
                  yolo12::cuda::dw_branch::layout(k.c0, k.c1, k.c1, k.c3).bytes,
                  cd::dw_branch_preferred(s) ? "the kernel" : "the five convs");
    }
}

namespace {

struct DwBranchVariant : VariantScope {
  explicit DwBranchVariant(bool on) : VariantScope(&cd::ConvVariants::f16_dw_branch, on) {}
};

}  // namespace

// Under f16_dw_branch the fp16 executor fuses the Detect head's class branches (graph::fuse_dw_branches) where the
// kernel takes their channels and runs them on conv2d_dw_branch_f16.
TEST_CASE("the class branches in the whole model: fused under f16_dw_branch, within the fp16 bound, plain and tuned",
          "[dw_branch][model]") {
  namespace test = yolo12::test;
  test::for_each_model_fixture(test::fused_kernel_fixtures(), [](const test::ModelFixture& c) {
    test::VariantOutputs r;
    {
      test::EnvScope forced("YOLO12_CHAIN_RUN", "fused");  // the kernel also where its rule keeps the links
      r = test::variant_outputs(c, [](bool on) { return DwBranchVariant(on); });
    }
    std::printf("%s\n", test::variant_line("dw_branch", "branches", c, r).c_str());
    if (r.ran_on) {
      CHECK(r.on_again == r.on);  // deterministic
      CHECK(r.e_on < c.bound16);
    }
    if (r.ran_tuned) CHECK(r.e_tuned < c.bound16);
    if (!test::variant_part("steps")) return;

    // The executor's steps: the class branches, each on the fused kernel where it takes the channels (forced: at the
    // fixture's batch 1 the rule, dw_branch_preferred, keeps the five convs, and the labels say so).
    DwBranchVariant on(true);
    const std::vector<std::string> unforced = test::fp16_step_labels(c);
    CHECK(test::count_containing(unforced, "[dw_branch_f16]") == 0);
    test::EnvScope forced("YOLO12_CHAIN_RUN", "fused");
    const std::vector<std::string> labels = test::fp16_step_labels(c);
    const int branches = test::count_containing(labels, "conv branch dw3x3");
    const int on_kernel = test::count_containing(labels, "[dw_branch_f16]");
    std::printf("[dw_branch] %-28s %d class branches, %d on the fused kernel\n", c.name.c_str(), branches, on_kernel);
    if (c.name.rfind("yolo12n", 0) == 0) {
      CHECK(branches == 2);  // P3 (64 channels in) and P4 (128); P5's 256 is over the kernel's 128
      CHECK(on_kernel == 2);
    }
    CHECK(on_kernel == branches);
  });
}
