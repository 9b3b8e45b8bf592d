// exp_approx (src/backends/cpu/simd.hpp) on every kind of float: accurate on its range, clamped
// outside, NaN for NaN, and no undefined behaviour on the way (the sanitizer build of CI runs this
// with -fsanitize=undefined and no recovery: before, the exponent was built by shifting a negative
// or overflowing signed integer for NaN inputs, which reach it through the conv epilogue and the
// Detect decode of a model with non-finite activations).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "backends/cpu/simd.hpp"
#include "catch.hpp"

using yolo12::cpu::exp_approx;

namespace {
float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
}  // namespace

TEST_CASE("exp_approx is accurate on [-87, 88] and clamps outside", "[simd]") {
  for (float x = -87.f; x <= 88.f; x += 0.01f) {
    const double want = std::exp(static_cast<double>(x));
    REQUIRE(std::abs(exp_approx(x) - want) <= 3e-7 * want);
  }
  CHECK(exp_approx(1000.f) == exp_approx(88.f));
  CHECK(exp_approx(-1000.f) == exp_approx(-87.f));
  CHECK(exp_approx(std::numeric_limits<float>::infinity()) == exp_approx(88.f));
  CHECK(exp_approx(-std::numeric_limits<float>::infinity()) == exp_approx(-87.f));
}

TEST_CASE("exp_approx of NaN is NaN, for every NaN bit pattern kind", "[simd]") {
  const std::uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu};
  for (std::uint32_t b : nans) {
    INFO("bits " << std::hex << b);
    CHECK(std::isnan(exp_approx(from_bits(b))));
  }
  // Random bit patterns: finite in, finite and positive out; NaN in, NaN out.
  std::mt19937 rng(13);
  for (int i = 0; i < 100000; ++i) {
    const float x = from_bits(static_cast<std::uint32_t>(rng()));
    const float y = exp_approx(x);
    if (std::isnan(x)) REQUIRE(std::isnan(y));
    else REQUIRE((std::isfinite(y) && y > 0.f));
  }
}
