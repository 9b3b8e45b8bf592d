// tests/unit/test_cpu_ops.cpp - what the CPU kernels do beyond the op table's contract: their checks
// of the views they are given, and conv2d without prepacked weights. What every op computes, on
// many shapes and slices, is the shared op suite's (tests/ops, test_ops_cpu).
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "backends/cpu/attention.hpp"
#include "backends/cpu/conv.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "yolo12/errors.hpp"

using yolo12::cpu::TensorView;

namespace {

std::vector<float> random_vector(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

}  // namespace

TEST_CASE("conv2d rejects views that disagree with the conv", "[cpu][conv]") {
  std::mt19937 rng(3);
  yolo12::cpu::ThreadPool pool(1);
  auto x = random_vector(4 * 8 * 8, rng), y = random_vector(4 * 7 * 8, rng);
  auto w = random_vector(4 * 4 * 9, rng), b = random_vector(4, rng);
  yolo12::cpu::ConvParams p;
  p.x = TensorView{x.data(), 4, 0, 4, 8, 8};
  p.y = TensorView{y.data(), 4, 0, 4, 7, 8};  // a 3x3 pad-1 conv of 8x8 is 8x8
  p.weight = w.data();
  p.bias = b.data();
  p.k = 3;
  p.pad = 1;
  p.c_in = p.c_out = 4;
  REQUIRE_THROWS_AS(yolo12::cpu::conv2d(p, pool), yolo12::InputError);
}

TEST_CASE("conv2d without prepacked weights packs them per call, to the same result", "[cpu][conv]") {
  std::mt19937 rng(12);
  yolo12::cpu::ThreadPool pool(3);
  struct Shape {
    int c_in, c_out, h, w, k, stride, groups;
  };
  for (const Shape& s : {Shape{13, 7, 5, 6, 1, 1, 1}, Shape{24, 40, 12, 10, 3, 1, 1}, Shape{16, 24, 10, 9, 3, 2, 2},
                         Shape{300, 9, 4, 5, 1, 1, 1}}) {
    INFO("conv " << s.k << "x" << s.k << "/" << s.stride << " " << s.c_in << "->" << s.c_out << " g" << s.groups);
    const int ho = (s.h + 2 * (s.k / 2) - s.k) / s.stride + 1, wo = (s.w + 2 * (s.k / 2) - s.k) / s.stride + 1;
    auto x = random_vector(2ull * s.c_in * s.h * s.w, rng);
    auto w = random_vector(1ull * s.c_out * (s.c_in / s.groups) * s.k * s.k, rng), b = random_vector(s.c_out, rng);
    std::vector<float> y[2];
    for (int packed = 0; packed < 2; ++packed) {
      y[packed].assign(2ull * s.c_out * ho * wo, 0.f);
      const std::vector<float> pk = yolo12::cpu::pack_conv_weight(w.data(), s.c_out, s.c_in, s.k, s.groups);
      yolo12::cpu::ConvParams p;
      static_cast<yolo12::graph::ConvAttrs&>(p) = {s.c_in, s.c_out, s.k, s.stride, s.k / 2, s.groups, 1,
                                                   yolo12::graph::Act::SiLU};
      p.x = TensorView{x.data(), s.c_in, 0, s.c_in, s.h, s.w};
      p.y = TensorView{y[packed].data(), s.c_out, 0, s.c_out, ho, wo};
      p.weight = w.data();
      p.packed = packed ? pk.data() : nullptr;
      p.bias = b.data();
      p.batch = 2;
      yolo12::cpu::conv2d(p, pool);
    }
    REQUIRE(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)) == 0);
  }
}

TEST_CASE("area attention rejects a token count the areas do not divide", "[cpu][attention]") {
  std::mt19937 rng(1);
  yolo12::cpu::ThreadPool pool(1);
  auto qkv = random_vector(96 * 3 * 5, rng), out = random_vector(32 * 3 * 5, rng);
  yolo12::cpu::AttentionParams p;
  p.q = TensorView{qkv.data(), 96, 0, 32, 3, 5};
  p.k = TensorView{qkv.data(), 96, 32, 32, 3, 5};
  p.v = TensorView{qkv.data(), 96, 64, 32, 3, 5};
  p.out = TensorView{out.data(), 32, 0, 32, 3, 5};
  p.area = 4;
  p.scale = 0.1f;
  REQUIRE_THROWS_AS(yolo12::cpu::area_attention(p, pool), yolo12::InputError);
}
