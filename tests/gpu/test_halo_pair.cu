// tests/gpu/test_halo_pair.cu - conv2d_halo_pair_f16 (src/backends/cuda/conv_halo_pair.cuh), a bottleneck's two 3x3
// convs at stride 1 in one kernel, launched directly:
// - against the double reference of the two convs (tests/ops: conv_reference), cv1's map rounded to fp16 between them
//   as the kernel keeps it, gamma and the residual as graph::ConvOp adds them. Bound: rel L2 at most twice that of a
//   naive fp16 implementation (the reference's output rounded to half), as test_conv's fp16 bound;
// - against the two convs on the kernels the executor would pick (conv2d_forward each): the same bound, and the
//   differences counted (both sum in K order in fp32: where both convs take conv2d_halo_f16 the bits should agree);
// - every output element is poisoned with NaN first and must be written; every element outside the output's channel
//   slice keeps its guard value bit for bit;
// - shapes: every channel count class (8, 16, 24, 32 for c_in, c_mid, c_out), partial tiles at the right and bottom
//   edges, maps smaller than a tile, input, output and residual slices, SiLU off on either conv, gamma, no
//   residual, one and two output rows per warp, a persistent grid of a few blocks (each walks many tiles), batch > 1;
// - the pairs and views it refuses throw yolo12::Error;
// - [host] halo_pair_rows_per_warp, the tile height the launch picks, on yolo12n's and yolo12s's pairs (also without a
//   GPU);
// - [model]: under the conv variant f16_halo_pair the whole model (the yolo12n and narrow yolo12l fixtures) with the
//   pairs fused, plain and tuned, within the fp16 bound against Ultralytics, and the executor's pairs on the kernel
//   (YOLO12_TEST_VARIANT_PARTS picks parts: model_fixtures.hpp).
// [.bench] (not run by default): yolo12n's four kinds of pair at a 640x640 input, batch 1 and 32, timed with CUDA
// events (median of 50 after 5 warm-up runs), with one and two rows per warp, against the two convs; the floor from
// bytes at 3.0 TB/s.
#include "catch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/conv.cuh"
#include "backends/cuda/conv_detail.cuh"
#include "backends/cuda/conv_halo_pair.cuh"
#include "backends/cuda/executor.cuh"
#include "model/model_file.hpp"
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



ConvShape conv3x3s1(int batch, int h, int w, int c_in, int c_out, bool silu) {
  ConvShape s;
  s.batch = batch;
  s.h = h;
  s.w_in = w;
  s.c_in = c_in;
  s.c_out = c_out;
  s.k = 3;
  s.stride = 1;
  s.pad = 1;
  s.act = silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  s.ho = h;
  s.wo = w;
  return s;
}

struct PairCase {
  int batch = 1, h = 0, w = 0, c_in = 16, c_mid = 8, c_out = 16;
  bool silu0 = true, silu1 = true, gamma = false, residual = true;
  int x_c0 = 0, x_extra = 0;  // the input slice: ldx = x_c0 + c_in + x_extra (x_c0 and ldx multiples of 8)
  int y_c0 = 0, y_extra = 0;  // the output slice
  int r_c0 = 0, r_extra = 0;  // the residual slice
  int rows_per_warp = 0, max_grid = 0;
  int ldx() const { return x_c0 + c_in + x_extra; }
  int ldy() const { return y_c0 + c_out + y_extra; }
  int ldr() const { return r_c0 + c_out + r_extra; }
  std::string describe() const {
    return "b" + std::to_string(batch) + " " + std::to_string(h) + "x" + std::to_string(w) + " " +
           std::to_string(c_in) + "->" + std::to_string(c_mid) + "->" + std::to_string(c_out) +
           (residual ? " +res" : "") + (gamma ? " gamma" : "") + (silu0 ? "" : " cv1 without SiLU") +
           (silu1 ? "" : " cv2 without SiLU") + " ldx " + std::to_string(ldx()) + " ldy " + std::to_string(ldy()) +
           " ldr " + std::to_string(ldr()) + " rows/warp " + std::to_string(rows_per_warp) +
           (max_grid ? " grid " + std::to_string(max_grid) : "");
  }
};


std::vector<__half> to_half(const std::vector<float>& v) {
  std::vector<__half> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = __float2half_rn(v[i]);
  return h;
}

// The case's host data and its device buffers, packed as the executor packs them.
struct PairRun {
  PairCase c;
  ConvShape s0, s1;
  std::size_t pixels;
  std::vector<float> x, w0, b0, g0, w1, b1, g1, r;  // x, r already fp16 values; w: (c_out, c_in, 3, 3)
  DeviceArray<__half> dx, dw0, dw1, dy, dmap, dr;
  DeviceArray<float> db0, db1, dg0, dg1;

  PairRun(const PairCase& pc, std::uint64_t seed)
      : c(pc), s0(conv3x3s1(pc.batch, pc.h, pc.w, pc.c_in, pc.c_mid, pc.silu0)),
        s1(conv3x3s1(pc.batch, pc.h, pc.w, pc.c_mid, pc.c_out, pc.silu1)),
        pixels(static_cast<std::size_t>(pc.batch) * pc.h * pc.w), dx(pixels * pc.ldx()),
        dw0(yolo12::cuda::conv_packed_weight_elems(s0)), dw1(yolo12::cuda::conv_packed_weight_elems(s1)),
        dy(pixels * pc.ldy()), dmap(pixels * pc.c_mid), dr(pixels * pc.ldr()), db0(pc.c_mid), db1(pc.c_out),
        dg0(pc.c_mid), dg1(pc.c_out) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    const auto values = [&](std::size_t n, float scale) {
      std::vector<float> v(n);
      for (auto& e : v) e = round_half(uni(rng) * scale);
      return v;
    };
    x = values(pixels * c.ldx(), 1.f);
    r = values(pixels * c.ldr(), 1.f);
    w0 = values(static_cast<std::size_t>(c.c_mid) * c.c_in * 9, 1.7f / std::sqrt(9.f * c.c_in));
    w1 = values(static_cast<std::size_t>(c.c_out) * c.c_mid * 9, 1.7f / std::sqrt(9.f * c.c_mid));
    b0 = values(c.c_mid, 0.5f);
    b1 = values(c.c_out, 0.5f);
    g0 = values(c.c_mid, 1.f);
    g1 = values(c.c_out, 1.f);
    dx.upload(to_half(x));
    dr.upload(to_half(r));
    std::vector<__half> p0(yolo12::cuda::conv_packed_weight_elems(s0)), p1(yolo12::cuda::conv_packed_weight_elems(s1));
    yolo12::cuda::conv_pack_weights<__half>(s0, w0.data(), p0.data());
    yolo12::cuda::conv_pack_weights<__half>(s1, w1.data(), p1.data());
    dw0.upload(p0);
    dw1.upload(p1);
    db0.upload(b0);
    db1.upload(b1);
    dg0.upload(g0);
    dg1.upload(g1);
  }
  ConvParams<__half> first() const {
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = s0;
    p.x = dx.p + c.x_c0;
    p.ldx = c.ldx();
    p.w = dw0.p;
    p.bias = db0.p;
    p.gamma = c.gamma ? dg0.p : nullptr;
    p.y = dmap.p;  // the two-kernel path's map (the fused kernel does not touch it)
    p.ldy = c.c_mid;
    return p;
  }
  ConvParams<__half> second() const {
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = s1;
    p.x = dmap.p;
    p.ldx = c.c_mid;
    p.w = dw1.p;
    p.bias = db1.p;
    p.gamma = c.gamma ? dg1.p : nullptr;
    if (c.residual) {
      p.residual = dr.p + c.r_c0;
      p.ldr = c.ldr();
    }
    p.y = dy.p + c.y_c0;
    p.ldy = c.ldy();
    return p;
  }
  // The output slice (poisoned before each launch, read back after it).
  yolo12::test::OutputSlice out() const { return {dy.p, pixels, c.ldy(), c.y_c0, c.c_out}; }
  // The double reference: cv1, its map rounded to half, then cv2 with gamma and the residual.
  std::vector<double> reference() const {
    std::vector<double> map(pixels * c.c_mid);
    ops::conv_reference(s0, ops::HostView{x.data(), c.ldx(), c.x_c0, c.c_in, c.h, c.w, true}, w0.data(), b0.data(),
                        c.gamma ? g0.data() : nullptr, ops::HostView{}, c.batch,
                        ops::RefOut{map.data(), c.c_mid, 0, c.c_mid, c.h, c.w, true});
    std::vector<float> map_half(map.size());
    for (std::size_t i = 0; i < map.size(); ++i) map_half[i] = round_half(static_cast<float>(map[i]));
    std::vector<double> out(pixels * c.c_out);
    const ops::HostView res = c.residual ? ops::HostView{r.data(), c.ldr(), c.r_c0, c.c_out, c.h, c.w, true}
                                         : ops::HostView{};
    ops::conv_reference(s1, ops::HostView{map_half.data(), c.c_mid, 0, c.c_mid, c.h, c.w, true}, w1.data(), b1.data(),
                        c.gamma ? g1.data() : nullptr, res, c.batch,
                        ops::RefOut{out.data(), c.c_out, 0, c.c_out, c.h, c.w, true});
    return out;
  }
};

void check_pair(const PairCase& pc, std::uint64_t seed) {
  INFO(pc.describe());
  PairRun run(pc, seed);
  REQUIRE(cd::halo_pair_supports(run.s0, run.s1));
  REQUIRE(cd::halo_pair_views_ok(run.first(), run.second()));
  const std::vector<double> ref = run.reference();
  const double bound = yolo12::test::fp16_bound(ref);

  run.out().poison();
  cd::launch_conv2d_halo_pair_f16(run.first(), run.second(), nullptr, pc.rows_per_warp, pc.max_grid);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  int unwritten = 0, guard_changed = 0;
  const std::vector<double> fused = run.out().read(unwritten, guard_changed);
  CHECK(unwritten == 0);
  CHECK(guard_changed == 0);
  REQUIRE(fused.size() == ref.size());
  const double err = rel_l2(fused, ref);
  INFO("fused: rel L2 " << err << ", bound " << bound);
  CHECK(err <= bound);

  // The two convs the pair would replace, on the same buffers.
  run.out().poison();
  yolo12::cuda::conv2d_forward<__half>(run.first(), nullptr);
  yolo12::cuda::conv2d_forward<__half>(run.second(), nullptr);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<double> split = run.out().read(unwritten, guard_changed);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) differ += fused[i] != split[i];
  INFO("two convs (" << yolo12::cuda::conv_plan_name(yolo12::cuda::conv_select(run.first())) << ", "
                     << yolo12::cuda::conv_plan_name(yolo12::cuda::conv_select(run.second())) << "): rel L2 "
                     << rel_l2(split, ref) << "; " << differ << " of " << fused.size() << " outputs differ");
  CHECK(rel_l2(split, ref) <= bound);
  CHECK(rel_l2(fused, split) <= bound);
}

}  // namespace

TEST_CASE("conv2d_halo_pair_f16 matches the reference of the two convs and the two convs' kernels",
          "[halo_pair][kernel]") {
  std::vector<PairCase> cases;
  const auto add = [&](int b, int h, int w, int c_in, int c_mid, int c_out, int rows_per_warp) {
    PairCase c;
    c.batch = b;
    c.h = h;
    c.w = w;
    c.c_in = c_in;
    c.c_mid = c_mid;
    c.c_out = c_out;
    c.rows_per_warp = rows_per_warp;
    cases.push_back(c);
    return &cases.back();
  };
  for (const int wr : {1, 2}) {
    add(1, 32, 32, 16, 8, 16, wr);              // yolo12n's backbone bottleneck, whole tiles
    add(2, 37, 53, 32, 16, 32, wr);             // partial tiles both ways
    add(1, 40, 40, 32, 32, 32, wr);             // the head's C3k bottleneck at 40x40
    add(3, 20, 18, 16, 16, 16, wr);             // at 80x80's width class, batch 3
    add(1, 5, 7, 8, 24, 32, wr);                // smaller than a tile; c_mid 24 (an N tile of 32)
    add(1, 160, 160, 16, 8, 16, wr)->max_grid = 3;  // 3 blocks walk the tiles
    PairCase* c = add(2, 27, 41, 24, 8, 8, wr);  // slices of every operand
    c->x_c0 = 8;
    c->x_extra = 16;
    c->y_c0 = 3;
    c->y_extra = 5;
    c->r_c0 = 8;
    c->r_extra = 8;
    c = add(1, 33, 19, 16, 32, 16, wr);
    c->silu0 = false;
    c->gamma = true;
    c = add(1, 19, 33, 32, 8, 24, wr);
    c->silu1 = false;
    c->residual = false;
  }
  std::uint64_t seed = 2400;
  for (const PairCase& pc : cases) check_pair(pc, ++seed);
}

TEST_CASE("conv2d_halo_pair_f16 refuses the pairs and views it does not take", "[halo_pair][kernel]") {
  PairCase pc;
  pc.h = pc.w = 32;
  PairRun run(pc, 7);
  CHECK(cd::halo_pair_supports(run.s0, run.s1));
  CHECK(cd::halo_pair_views_ok(run.first(), run.second()));
  CHECK(cd::halo_pair_channels(16, 8, 16));
  CHECK_FALSE(cd::halo_pair_channels(16, 8, 64));  // over 32 channels
  CHECK_FALSE(cd::halo_pair_channels(12, 8, 16));  // not a multiple of 8
  ConvShape other = run.s1;
  other.c_out = 64;
  CHECK_FALSE(cd::halo_pair_supports(run.s0, other));
  other = run.s1;
  other.stride = 2;
  CHECK_FALSE(cd::halo_pair_supports(run.s0, other));
  other = run.s1;
  other.k = 1;
  other.pad = 0;
  CHECK_FALSE(cd::halo_pair_supports(run.s0, other));
  other = run.s1;
  other.w_in += 1;  // not cv1's output
  CHECK_FALSE(cd::halo_pair_supports(run.s0, other));
  ConvParams<__half> first = run.first();
  first.residual = run.second().y;  // cv1 with a residual
  first.ldr = run.second().ldy;
  CHECK_FALSE(cd::halo_pair_views_ok(first, run.second()));
  CHECK_THROWS_AS(cd::launch_conv2d_halo_pair_f16(first, run.second(), nullptr), yolo12::Error);
  first = run.first();
  first.x += 4;  // not 16-byte aligned
  CHECK_FALSE(cd::halo_pair_views_ok(first, run.second()));
  CHECK_THROWS_AS(cd::launch_conv2d_halo_pair_f16(first, run.second(), nullptr), yolo12::Error);
  CHECK_THROWS_AS(cd::launch_conv2d_halo_pair_f16(run.first(), run.second(), nullptr, 3), yolo12::Error);
}


TEST_CASE("halo_pair_rows_per_warp: the taller tile where two or more of its blocks share an SM and fill it twice",
          "[halo_pair][host]") {
  // The rule on an H100's and an H200's numbers (DeviceInfo's defaults: 132 SMs, 228 KiB a multiprocessor), for the
  // pairs of yolo12n and yolo12s at 640x640 (test_halo_pair "[.bench]", thirty-seventh session: the choices below were
  // the faster ones at batch 32), and what decides it: blocks per SM from shared memory, tiles against block slots.
  const auto rows = [](int batch, int size, int c_in, int c_mid, int c_out,
                       const yolo12::cuda::DeviceInfo& dev = yolo12::cuda::DeviceInfo{}) {
    const ConvShape a = conv3x3s1(batch, size, size, c_in, c_mid, true), b = conv3x3s1(batch, size, size, c_mid, c_out, true);
    REQUIRE(cd::halo_pair_supports(a, b));
    return cd::halo_pair_rows_per_warp(a, b, dev);
  };
  CHECK(rows(32, 160, 16, 8, 16) == 2);   // four blocks of the taller tile per SM
  CHECK(rows(32, 80, 16, 16, 16) == 2);   // three
  CHECK(rows(32, 80, 32, 16, 32) == 2);   // two (one row per warp until two m16 tiles per warp)
  CHECK(rows(32, 160, 32, 16, 32) == 2);  // yolo12s's
  CHECK(rows(32, 40, 32, 32, 32) == 1);   // one: the shorter tile keeps two blocks per SM
  CHECK(rows(32, 80, 32, 32, 32) == 1);
  for (const int size : {160, 80}) CHECK(rows(1, size, 16, 8, 16) == 1);  // under two waves of the taller tile
  CHECK(rows(1, 80, 32, 16, 32) == 1);
  CHECK(rows(8, 80, 32, 16, 32) == 1);    // 200 tiles for 264 block slots
  yolo12::cuda::DeviceInfo small;  // a GPU with fewer SMs fills with fewer tiles
  small.sm_count = 40;
  CHECK(rows(8, 80, 32, 16, 32, small) == 2);
}

TEST_CASE("conv2d_halo_pair_f16 against the two convs on yolo12n's pairs (timing)", "[.bench][halo_pair]") {
  struct Kind {
    int size, c_in, c_mid, c_out;
  };
  // yolo12n at 640x640: the backbone's two C3k2 bottlenecks and the head's C3k bottlenecks at 80x80 and 40x40.
  for (const Kind k : {Kind{160, 16, 8, 16}, Kind{80, 32, 16, 32}, Kind{80, 16, 16, 16}, Kind{40, 32, 32, 32}})
    for (int batch : {1, 32}) {
      PairCase pc;
      pc.batch = batch;
      pc.h = pc.w = k.size;
      pc.c_in = k.c_in;
      pc.c_mid = k.c_mid;
      pc.c_out = k.c_out;
      PairRun run(pc, 11);
      const ConvParams<__half> a = run.first(), b = run.second();
      const float f1 = median_ms([&] { cd::launch_conv2d_halo_pair_f16(a, b, nullptr, 1); }, 50);
      const float f2 = median_ms([&] { cd::launch_conv2d_halo_pair_f16(a, b, nullptr, 2); }, 50);
      const float t0 = median_ms([&] { yolo12::cuda::conv2d_forward<__half>(a, nullptr); }, 50);
      const float t1 = median_ms([&] { yolo12::cuda::conv2d_forward<__half>(b, nullptr); }, 50);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      const double bytes = 2.0 * run.pixels * (k.c_in + 2.0 * k.c_out);  // input, residual, output
      std::printf("halo_pair %d->%d->%d +res b%d %dx%d: fused %.4f ms (1 row/warp) %.4f ms (2, the rule's %d), two "
                  "convs %.4f ms (%.4f %s + %.4f %s), fused floor %.4f ms at 3.0 TB/s\n",
                  k.c_in, k.c_mid, k.c_out, batch, k.size, k.size, f1, f2,
                  cd::halo_pair_rows_per_warp(run.s0, run.s1, yolo12::cuda::device_info()), t0 + t1, t0,
                  yolo12::cuda::conv_plan_name(yolo12::cuda::conv_select(a)).c_str(), t1,
                  yolo12::cuda::conv_plan_name(yolo12::cuda::conv_select(b)).c_str(), bytes / 3.0e9);
    }
}

namespace {

struct HaloPairVariant : VariantScope {
  explicit HaloPairVariant(bool on) : VariantScope(&cd::ConvVariants::f16_halo_pair, on) {}
};

}  // namespace

// Under f16_halo_pair the fp16 executor fuses the bottlenecks' 3x3 pairs (graph::fuse_stride1_pairs) of 8-32 channels
// and runs them on conv2d_halo_pair_f16.
TEST_CASE("the stride-1 pairs in the whole model: fused under f16_halo_pair, within the fp16 bound, plain and tuned",
          "[halo_pair][model]") {
  namespace test = yolo12::test;
  test::for_each_model_fixture(test::fused_kernel_fixtures(), [](const test::ModelFixture& c) {
    const test::VariantOutputs r = test::variant_outputs(c, [](bool on) { return HaloPairVariant(on); });
    std::printf("%s\n", test::variant_line("halo_pair", "pairs", c, r).c_str());
    if (r.ran_on) {
      CHECK(r.on_again == r.on);  // deterministic
      CHECK(r.e_on < c.bound16);
    }
    if (r.ran_tuned) CHECK(r.e_tuned < c.bound16);
    if (!test::variant_part("steps")) return;

    // The executor's steps: the stride-1 pairs, each on the fused kernel (the label says which).
    HaloPairVariant on(true);
    const std::vector<std::string> labels = test::fp16_step_labels(c);
    const int pairs = test::count_containing(labels, "conv pair 3x3/1");
    const int fused = test::count_containing(labels, "[halo_pair_f16]");
    std::printf("[halo_pair] %-28s %d stride-1 pairs, %d on the fused kernel\n", c.name.c_str(), pairs, fused);
    if (c.name.rfind("yolo12n", 0) == 0) CHECK(pairs == 8);  // 2 backbone C3k2, 2 + 4 head C3k bottlenecks
    CHECK(fused == pairs);
  });
}
