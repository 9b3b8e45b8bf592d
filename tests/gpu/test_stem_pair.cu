// tests/gpu/test_stem_pair.cu - conv2d_stem_pair_f16 (src/backends/cuda/conv_stem_pair.cuh), the stem and the conv
// after it in one kernel, launched directly:
// - against the double reference of the two convs (tests/ops: conv_reference), the stem's output rounded to fp16
//   between them as the kernel keeps it. Bound: rel L2 at most twice that of a naive fp16 implementation (the
//   reference's output rounded to half), as test_conv's fp16 bound;
// - against the two kernels it would replace (conv2d_stem_f16, then conv2d_forward on the second conv): the same
//   bound, and the differences counted;
// - every output element is poisoned with NaN first and must be written; every element outside the output's
//   channel slice keeps its guard value bit for bit;
// - shapes: both channel pairs it takes (16 -> 32, 32 -> 64), partial tiles at the right and bottom edges, odd
//   input sizes, an input slice (ldx > 3, offset), an output slice, SiLU off on either conv, a persistent grid of
//   a few blocks (each walks many tiles), batch > 1;
// - both stems: by fp32 FMAs and on mma.sync (variant f16_stem_pair_mma);
// - the pairs it refuses (other shapes and views) throw yolo12::Error;
// - [model]: under the conv variant f16_stem_pair the whole model (the yolo12n and narrow yolo12l fixtures) with the
//   pair fused, plain, tuned and with the stem on mma.sync, within the fp16 bound against Ultralytics, and the
//   executor's one pair on the kernel (YOLO12_TEST_VARIANT_PARTS picks parts: model_fixtures.hpp).
// [.bench] (not run by default): yolo12n's and yolo12s's pair at 640x640, batch 1 and 32, timed with CUDA events
// (median of 50 after 5 warm-up runs), with either stem, against the two kernels; the floor from bytes at 3.0 TB/s
// (the H100's measured copy bandwidth, nineteenth session).
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
#include "backends/cuda/conv_stem.cuh"
#include "backends/cuda/conv_stem_pair.cuh"
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
namespace cd = yolo12::cuda::conv_detail;
namespace ops = yolo12::test::ops;

namespace {



ConvShape conv3x3s2(int batch, int h, int w, int c_in, int c_out, bool silu) {
  ConvShape s;
  s.batch = batch;
  s.h = h;
  s.w_in = w;
  s.c_in = c_in;
  s.c_out = c_out;
  s.k = 3;
  s.stride = 2;
  s.pad = 1;
  s.act = silu ? yolo12::graph::Act::SiLU : yolo12::graph::Act::None;
  s.ho = static_cast<int>(s.out_size(h));
  s.wo = static_cast<int>(s.out_size(w));
  return s;
}

struct PairCase {
  int batch = 1, h = 0, w = 0, c1 = 16, c2 = 32;
  bool silu0 = true, silu1 = true;
  int x_c0 = 0, x_extra = 0;  // the input slice: ldx = x_c0 + 3 + x_extra
  int y_c0 = 0, y_extra = 0;  // the output slice (y_c0 and ldy even: half2 stores)
  int max_grid = 0;
  std::string describe() const {
    return "b" + std::to_string(batch) + " " + std::to_string(h) + "x" + std::to_string(w) + " 3->" +
           std::to_string(c1) + "->" + std::to_string(c2) + (silu0 ? "" : " stem without SiLU") +
           (silu1 ? "" : " next without SiLU") + " ldx " + std::to_string(x_c0 + 3 + x_extra) + " ldy " +
           std::to_string(y_c0 + c2 + y_extra) + (max_grid ? " grid " + std::to_string(max_grid) : "");
  }
};


using yolo12::test::rel_l2;

// The case's host data and its device buffers, packed as the executor packs them.
struct PairRun {
  PairCase c;
  ConvShape s0, s1;
  int ldx = 0, ldy = 0;
  std::vector<float> x, w0, b0, w1, b1;  // x: (B, H, W, ldx), already fp16 values; w: (c_out, c_in, 3, 3)
  DeviceArray<__half> dx, dw0, dw1, dy, dmap;
  DeviceArray<float> db0, db1;

  static std::size_t n_x(const PairCase& c) {
    return static_cast<std::size_t>(c.batch) * c.h * c.w * (c.x_c0 + 3 + c.x_extra);
  }
  static ConvShape stem_of(const PairCase& c) { return conv3x3s2(c.batch, c.h, c.w, 3, c.c1, c.silu0); }
  static ConvShape next_of(const PairCase& c) {
    const ConvShape s0 = stem_of(c);
    return conv3x3s2(c.batch, s0.ho, s0.wo, c.c1, c.c2, c.silu1);
  }
  static std::size_t n_y(const PairCase& c) {
    const ConvShape s1 = next_of(c);
    return static_cast<std::size_t>(c.batch) * s1.ho * s1.wo * (c.y_c0 + c.c2 + c.y_extra);
  }
  static std::size_t n_map(const PairCase& c) {
    const ConvShape s0 = stem_of(c);
    return static_cast<std::size_t>(c.batch) * s0.ho * s0.wo * c.c1;
  }

  PairRun(const PairCase& pc, std::uint64_t seed)
      : c(pc), s0(stem_of(pc)), s1(next_of(pc)), ldx(pc.x_c0 + 3 + pc.x_extra), ldy(pc.y_c0 + pc.c2 + pc.y_extra),
        dx(n_x(pc)), dw0(yolo12::cuda::conv_packed_weight_elems(stem_of(pc))),
        dw1(yolo12::cuda::conv_packed_weight_elems(next_of(pc))), dy(n_y(pc)), dmap(n_map(pc)), db0(pc.c1), db1(pc.c2) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(-1.f, 1.f);
    x.resize(n_x(c));
    for (auto& v : x) v = round_half(uni(rng));
    const auto weights = [&](std::vector<float>& w, std::vector<float>& b, int c_out, int c_in) {
      const float scale = 1.7f / std::sqrt(9.f * c_in);
      w.resize(static_cast<std::size_t>(c_out) * c_in * 9);
      for (auto& v : w) v = round_half(uni(rng) * scale);
      b.resize(c_out);
      for (auto& v : b) v = 0.5f * uni(rng);
    };
    weights(w0, b0, c.c1, 3);
    weights(w1, b1, c.c2, c.c1);
    std::vector<__half> hx(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) hx[i] = __float2half_rn(x[i]);
    dx.upload(hx);
    std::vector<__half> p0(yolo12::cuda::conv_packed_weight_elems(s0)), p1(yolo12::cuda::conv_packed_weight_elems(s1));
    yolo12::cuda::conv_pack_weights<__half>(s0, w0.data(), p0.data());
    yolo12::cuda::conv_pack_weights<__half>(s1, w1.data(), p1.data());
    dw0.upload(p0);
    dw1.upload(p1);
    db0.upload(b0);
    db1.upload(b1);
  }
  ConvParams<__half> stem() const {
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = s0;
    p.x = dx.p + c.x_c0;
    p.ldx = ldx;
    p.w = dw0.p;
    p.bias = db0.p;
    p.y = dmap.p;  // the two-kernel path's map (the fused kernel does not touch it)
    p.ldy = c.c1;
    return p;
  }
  ConvParams<__half> next() const {
    ConvParams<__half> p;
    static_cast<ConvShape&>(p) = s1;
    p.x = dmap.p;
    p.ldx = c.c1;
    p.w = dw1.p;
    p.bias = db1.p;
    p.y = dy.p + c.y_c0;
    p.ldy = ldy;
    return p;
  }
  // The output slice (poisoned before each launch, read back after it).
  yolo12::test::OutputSlice out() const { return {dy.p, n_y(c) / ldy, ldy, c.y_c0, c.c2}; }
  // The double reference: the stem, its output rounded to half (the kernels' map), then the second conv.
  std::vector<double> reference() const {
    std::vector<double> map(n_map(c));
    ops::conv_reference(s0, ops::HostView{x.data(), ldx, c.x_c0, 3, s0.h, s0.w_in, true}, w0.data(), b0.data(),
                        nullptr, ops::HostView{}, c.batch, ops::RefOut{map.data(), c.c1, 0, c.c1, s0.ho, s0.wo, true});
    std::vector<float> map_half(map.size());
    for (std::size_t i = 0; i < map.size(); ++i) map_half[i] = round_half(static_cast<float>(map[i]));
    std::vector<double> out(static_cast<std::size_t>(c.batch) * s1.ho * s1.wo * c.c2);
    ops::conv_reference(s1, ops::HostView{map_half.data(), c.c1, 0, c.c1, s1.h, s1.w_in, true}, w1.data(), b1.data(),
                        nullptr, ops::HostView{}, c.batch, ops::RefOut{out.data(), c.c2, 0, c.c2, s1.ho, s1.wo, true});
    return out;
  }
};

void check_pair(const PairCase& pc, std::uint64_t seed) {
  INFO(pc.describe());
  PairRun run(pc, seed);
  REQUIRE(cd::stem_pair_supports(run.s0, run.s1));
  REQUIRE(cd::stem_pair_views_ok(run.stem(), run.next()));
  const std::vector<double> ref = run.reference();
  const double bound = yolo12::test::fp16_bound(ref);

  run.out().poison();
  cd::launch_conv2d_stem_pair_f16(run.stem(), run.next(), nullptr, pc.max_grid);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  int unwritten = 0, guard_changed = 0;
  const std::vector<double> fused = run.out().read(unwritten, guard_changed);
  CHECK(unwritten == 0);
  CHECK(guard_changed == 0);
  REQUIRE(fused.size() == ref.size());
  const double err = rel_l2(fused, ref);
  INFO("fused: rel L2 " << err << ", bound " << bound);
  CHECK(err <= bound);

  // The two kernels the pair would replace, on the same buffers.
  run.out().poison();
  cd::launch_conv2d_stem_f16(run.stem(), nullptr);
  yolo12::cuda::conv2d_forward<__half>(run.next(), nullptr);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<double> split = run.out().read(unwritten, guard_changed);
  const double err_split = rel_l2(split, ref);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) differ += fused[i] != split[i];
  INFO("two kernels: rel L2 " << err_split << "; " << differ << " of " << fused.size()
                               << " outputs differ from the fused");
  CHECK(err_split <= bound);
  CHECK(rel_l2(fused, split) <= bound);
}

}  // namespace

TEST_CASE("conv2d_stem_pair_f16 matches the reference of the two convs and the two kernels", "[stem_pair][kernel]") {
  std::vector<PairCase> cases;
  const auto add = [&](int b, int h, int w, int c1) {
    PairCase c;
    c.batch = b;
    c.h = h;
    c.w = w;
    c.c1 = c1;
    c.c2 = 2 * c1;
    cases.push_back(c);
    return &cases.back();
  };
  add(1, 64, 64, 16);                // whole tiles (16 x 16 out: 1 x 2 tiles)
  add(2, 37, 53, 16);                // odd sizes: 19 x 27 map, 10 x 14 out (partial tiles both ways)
  add(1, 130, 70, 32);               // 33 x 18 out: a partial tile row and column
  add(3, 18, 130, 32);               // a short map: one tile row, 33 columns
  add(1, 5, 6, 16);                  // smaller than one tile
  add(2, 200, 200, 16)->max_grid = 3;  // 3 blocks walk 56 tiles (50 x 50 out, 4 x 7 tiles per image)
  PairCase* c = add(2, 41, 47, 16);  // an input slice and an output slice
  c->x_c0 = 1;
  c->x_extra = 2;
  c->y_c0 = 2;
  c->y_extra = 4;
  c = add(1, 45, 33, 32);
  c->silu0 = false;
  c->y_c0 = 4;
  c = add(1, 33, 45, 16);
  c->silu1 = false;
  for (const bool stem_mma : {false, true}) {  // the stem by fp32 FMAs and on mma.sync (variant f16_stem_pair_mma)
    INFO("f16_stem_pair_mma " << stem_mma);
    VariantScope v(&cd::ConvVariants::f16_stem_pair_mma, stem_mma);
    std::uint64_t seed = 1900;
    for (const PairCase& pc : cases) check_pair(pc, ++seed);
  }
}

TEST_CASE("conv2d_stem_pair_f16 refuses the pairs and views it does not take", "[stem_pair][kernel]") {
  PairCase pc;
  pc.h = pc.w = 32;
  PairRun run(pc, 7);
  CHECK(cd::stem_pair_supports(run.s0, run.s1));
  CHECK(cd::stem_pair_views_ok(run.stem(), run.next()));
  ConvShape other = run.s1;
  other.c_out = 48;  // 16 -> 48: not a pair it has code for
  CHECK_FALSE(cd::stem_pair_supports(run.s0, other));
  other = run.s1;
  other.stride = 1;
  CHECK_FALSE(cd::stem_pair_supports(run.s0, other));
  other = run.s1;
  other.h += 1;  // not the stem's output
  CHECK_FALSE(cd::stem_pair_supports(run.s0, other));
  ConvParams<__half> next = run.next();
  next.residual = next.y;
  next.ldr = next.ldy;
  CHECK_FALSE(cd::stem_pair_views_ok(run.stem(), next));
  CHECK_THROWS_AS(cd::launch_conv2d_stem_pair_f16(run.stem(), next, nullptr), yolo12::Error);
  next = run.next();
  next.ldy += 1;  // odd: no half2 stores
  CHECK_FALSE(cd::stem_pair_views_ok(run.stem(), next));
  CHECK_THROWS_AS(cd::launch_conv2d_stem_pair_f16(run.stem(), next, nullptr), yolo12::Error);
}


TEST_CASE("conv2d_stem_pair_f16 against the two kernels at 640x640 (timing)", "[.bench][stem_pair]") {
  for (int c1 : {16, 32})
    for (int batch : {1, 32}) {
      PairCase pc;
      pc.batch = batch;
      pc.h = pc.w = 640;
      pc.c1 = c1;
      pc.c2 = 2 * c1;
      PairRun run(pc, 11);
      const ConvParams<__half> stem = run.stem(), next = run.next();
      float fused = 0, fused_mma = 0;
      for (const bool stem_mma : {false, true}) {
        VariantScope v(&cd::ConvVariants::f16_stem_pair_mma, stem_mma);
        (stem_mma ? fused_mma : fused) = median_ms([&] { cd::launch_conv2d_stem_pair_f16(stem, next, nullptr); }, 50);
      }
      const float t_stem = median_ms([&] { cd::launch_conv2d_stem_f16(stem, nullptr); }, 50);
      const float t_next = median_ms([&] { yolo12::cuda::conv2d_forward<__half>(next, nullptr); }, 50);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      const double bytes = 2.0 * (PairRun::n_x(pc) + PairRun::n_y(pc));  // the input read, the output written
      std::printf("stem_pair 3->%d->%d b%d 640x640: fused %.4f ms (the stem on mma.sync: %.4f), two kernels "
                  "%.4f ms (stem %.4f + next %.4f, %s), fused floor %.4f ms at 3.0 TB/s\n",
                  c1, 2 * c1, batch, fused, fused_mma, t_stem + t_next, t_stem, t_next,
                  yolo12::cuda::conv_plan_name(yolo12::cuda::conv_select(next)).c_str(), bytes / 3.0e9);
    }
}

namespace {

// The conv variant f16_stem_pair for the life of this object.
struct PairVariant : VariantScope {
  explicit PairVariant(bool on) : VariantScope(&cd::ConvVariants::f16_stem_pair, on) {}
};

}  // namespace

// Under f16_stem_pair the fp16 executor fuses the stem and the conv after it (graph::fuse_stride2_pairs), and both
// fixtures' pairs (3 -> 16 -> 32: yolo12n, and yolo12l at width 0.25) run on conv2d_stem_pair_f16.
TEST_CASE("the stem pair in the whole model: fused under f16_stem_pair, within the fp16 bound, plain and tuned",
          "[stem_pair][model]") {
  namespace test = yolo12::test;
  test::for_each_model_fixture(test::fused_kernel_fixtures(), [](const test::ModelFixture& c) {
    // The parts YOLO12_TEST_VARIANT_PARTS selects (model_fixtures.hpp): plain, on (the pair with either stem), tuned,
    // steps.
    double e_plain = 0, e_pair = 0, e_tuned = 0, e_mma = 0;
    const bool run_plain = test::variant_part("plain"), run_on = test::variant_part("on"),
               run_tuned = test::variant_part("tuned");
    if (run_plain) {
      PairVariant off(false);
      yolo12::Detector d(c.model, c.options);
      e_plain = test::reference_error(c, d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr));
    }
    if (run_on || run_tuned) {
      PairVariant pair(true);
      VariantScope fma(&cd::ConvVariants::f16_stem_pair_mma, false);  // the FMA stem; the mma stem below
      if (run_on) {
        yolo12::Detector d(c.model, c.options);
        const std::vector<float> paired = d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr);
        CHECK(d.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr) == paired);  // deterministic
        e_pair = test::reference_error(c, paired);
      }
      if (run_tuned) {
        yolo12::DetectorOptions t = c.options;
        t.tune_kernels = true;
        yolo12::Detector dt(c.model, t);
        e_tuned = test::reference_error(c, dt.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr));
      }
      if (run_on) {
        VariantScope mma(&cd::ConvVariants::f16_stem_pair_mma, true);
        yolo12::Detector dm(c.model, c.options);
        e_mma = test::reference_error(c, dm.forward_raw(c.x.data.data(), 1, c.h, c.w, nullptr, nullptr));
      }
    }
    std::printf("[stem_pair] %-28s fp16 vs Ultralytics: plain %s, pair %s, pair tuned %s, pair with the stem "
                "on mma.sync %s (bound %.2e)\n",
                c.name.c_str(), test::error_or_skip(run_plain, e_plain).c_str(),
                test::error_or_skip(run_on, e_pair).c_str(), test::error_or_skip(run_tuned, e_tuned).c_str(),
                test::error_or_skip(run_on, e_mma).c_str(), c.bound16);
    if (run_on) {
      CHECK(e_pair < c.bound16);
      CHECK(e_mma < c.bound16);
    }
    if (run_tuned) CHECK(e_tuned < c.bound16);
    if (!test::variant_part("steps")) return;

    // The executor's steps: one stride-2 pair, on the fused kernel where it takes it (the label says which; the
    // stride-1 pairs, "conv pair 3x3/1", are test_halo_pair's).
    PairVariant on(true);
    const std::vector<std::string> labels = test::fp16_step_labels(c);
    CHECK(test::count_containing(labels, "conv pair 3x3/2") == 1);
    CHECK(test::count_containing(labels, "[stem_pair_f16]") == 1);
  });
}
