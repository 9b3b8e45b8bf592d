// tests/gpu/test_elementwise.cu - upsample, max-pool, channel copy and the NCHW->NHWC cast against
// plain CPU loops, on many shapes, through channel-slice views (c0 > 0, ld > c), fp32 and fp16.
// Outputs are poisoned with NaN and every element outside the written slice must keep its poison
// (guard check); every element inside must match exactly (these ops only move or compare values).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "catch.hpp"
#include "backends/cuda/common.cuh"
#include "core/half.hpp"
#include "backends/cuda/elementwise.cuh"

using namespace yolo12;
using namespace yolo12::cuda;

namespace {

template <typename T> std::uint16_t bits_of(T v);
template <> std::uint16_t bits_of<__half>(__half v) {
  std::uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

template <typename T> T from_float(float f);
template <> float from_float<float>(float f) { return f; }
template <> __half from_float<__half>(float f) {
  const std::uint16_t b = float_to_half(f);
  __half h;
  std::memcpy(&h, &b, 2);
  return h;
}
template <typename T> float to_float(T v);
template <> float to_float<float>(float v) { return v; }
template <> float to_float<__half>(__half v) { return half_to_float(bits_of(v)); }

// A random NHWC buffer (B, H, W, ld) in T, values of both signs, no zeros.
template <typename T>
std::vector<T> random_nhwc(std::mt19937& rng, std::size_t n) {
  std::uniform_real_distribution<float> u(0.05f, 4.f);
  std::bernoulli_distribution neg(0.5);
  std::vector<T> v(n);
  for (auto& x : v) x = from_float<T>(neg(rng) ? -u(rng) : u(rng));
  return v;
}

template <typename T>
std::vector<T> nan_filled(std::size_t n) {
  return std::vector<T>(n, from_float<T>(std::nanf("")));
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& h) {
  DeviceBuffer d(h.size() * sizeof(T));
  YOLO12_CUDA_CHECK(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> download(const DeviceBuffer& d, std::size_t n) {
  std::vector<T> h(n);
  YOLO12_CUDA_CHECK(cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Output view (B, P, ldy) written at channels [c0, c0 + c): inside must equal ref (exact, by value),
// outside must still be NaN. ref: (B, P, c).
template <typename T>
void check_slice(const std::vector<T>& out, const std::vector<float>& ref, int B, long long P, int ldy, int c0, int c) {
  long long wrong = 0, stray = 0, unwritten = 0;
  for (int n = 0; n < B; ++n)
    for (long long p = 0; p < P; ++p)
      for (int ch = 0; ch < ldy; ++ch) {
        const float v = to_float(out[(n * P + p) * ldy + ch]);
        if (ch >= c0 && ch < c0 + c) {
          const float r = ref[(n * P + p) * c + (ch - c0)];
          if (std::isnan(v)) ++unwritten;
          else if (v != r) ++wrong;
        } else if (!std::isnan(v)) {
          ++stray;
        }
      }
  CHECK(unwritten == 0);
  CHECK(wrong == 0);
  CHECK(stray == 0);
}

struct Shape {
  int B, H, W, C;
};
const Shape kShapes[] = {{1, 20, 20, 64}, {2, 7, 5, 3}, {1, 40, 40, 17}, {3, 1, 1, 1}, {1, 13, 31, 96}, {2, 80, 80, 8}};

template <typename T>
void run_upsample() {
  std::mt19937 rng(1);
  for (const Shape& s : kShapes) {
    for (int factor : {1, 2, 3})
    for (bool aligned : {false, true}) {  // aligned: 16-byte views, the vector kernel where C allows
      const int c8 = (s.C + 7) / 8 * 8;
      const int ldx = aligned ? c8 + 8 : s.C + 5, cx0 = aligned ? 8 : 2;
      const int ldy = aligned ? c8 + 16 : s.C + 7, cy0 = aligned ? 8 : 3;
      INFO("B " << s.B << " H " << s.H << " W " << s.W << " C " << s.C << " factor " << factor << " aligned " << aligned);
      const auto x = random_nhwc<T>(rng, static_cast<std::size_t>(s.B) * s.H * s.W * ldx);
      const int ho = s.H * factor, wo = s.W * factor;
      const std::size_t ny = static_cast<std::size_t>(s.B) * ho * wo * ldy;
      DeviceBuffer dx = upload(x), dy = upload(nan_filled<T>(ny));
      UpsampleNearestParams<T> p;
      p.x = dx.as<T>() + cx0;
      p.ldx = ldx;
      p.y = dy.as<T>() + cy0;
      p.ldy = ldy;
      p.batch = s.B, p.h = s.H, p.w = s.W, p.c = s.C, p.factor = factor;
      upsample_nearest<T>(p, nullptr);
      YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> ref(static_cast<std::size_t>(s.B) * ho * wo * s.C);
      for (int n = 0; n < s.B; ++n)
        for (int y = 0; y < ho; ++y)
          for (int xx = 0; xx < wo; ++xx)
            for (int c = 0; c < s.C; ++c)
              ref[((static_cast<std::size_t>(n) * ho + y) * wo + xx) * s.C + c] =
                  to_float(x[((static_cast<std::size_t>(n) * s.H + y / factor) * s.W + xx / factor) * ldx + cx0 + c]);
      check_slice(download<T>(dy, ny), ref, s.B, static_cast<long long>(ho) * wo, ldy, cy0, s.C);
    }
  }
}

template <typename T>
void run_maxpool() {
  std::mt19937 rng(2);
  for (const Shape& s : kShapes) {
    for (int k : {1, 3, 5, 9}) {
      const int ldx = s.C + 4, cx0 = 4, ldy = 4 * s.C, cy0 = s.C;
      INFO("B " << s.B << " H " << s.H << " W " << s.W << " C " << s.C << " k " << k);
      const auto x = random_nhwc<T>(rng, static_cast<std::size_t>(s.B) * s.H * s.W * ldx);
      const std::size_t ny = static_cast<std::size_t>(s.B) * s.H * s.W * ldy;
      DeviceBuffer dx = upload(x), dy = upload(nan_filled<T>(ny));
      MaxPoolParams<T> p;
      p.x = dx.as<T>() + cx0;
      p.ldx = ldx;
      p.y = dy.as<T>() + cy0;
      p.ldy = ldy;
      p.batch = s.B, p.h = s.H, p.w = s.W, p.c = s.C, p.k = k;
      REQUIRE(max_pool_can_implement(k));
      max_pool_same<T>(p, nullptr);
      YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<float> ref(static_cast<std::size_t>(s.B) * s.H * s.W * s.C);
      const int r = k / 2;
      for (int n = 0; n < s.B; ++n)
        for (int y = 0; y < s.H; ++y)
          for (int xx = 0; xx < s.W; ++xx)
            for (int c = 0; c < s.C; ++c) {
              float best = -INFINITY;  // padding never wins: only real pixels
              for (int yy = y - r; yy <= y + r; ++yy)
                for (int x2 = xx - r; x2 <= xx + r; ++x2)
                  if (yy >= 0 && yy < s.H && x2 >= 0 && x2 < s.W)
                    best = std::max(best, to_float(x[((static_cast<std::size_t>(n) * s.H + yy) * s.W + x2) * ldx + cx0 + c]));
              ref[((static_cast<std::size_t>(n) * s.H + y) * s.W + xx) * s.C + c] = best;
            }
      check_slice(download<T>(dy, ny), ref, s.B, static_cast<long long>(s.H) * s.W, ldy, cy0, s.C);
    }
  }
  CHECK_FALSE(max_pool_can_implement(4));
  CHECK_FALSE(max_pool_can_implement(0));
}

template <typename T>
void run_copy() {
  std::mt19937 rng(3);
  for (const Shape& s : kShapes)
  for (bool aligned : {false, true}) {  // aligned: 16-byte views, the vector kernel where C allows
    const int c8 = (s.C + 7) / 8 * 8;
    const int ldx = aligned ? 3 * c8 : 3 * s.C, cx0 = aligned ? c8 : s.C;
    const int ldy = aligned ? 2 * c8 + 8 : 2 * s.C + 1, cy0 = aligned ? 8 : s.C + 1;
    INFO("B " << s.B << " H " << s.H << " W " << s.W << " C " << s.C << " aligned " << aligned);
    const long long P = static_cast<long long>(s.H) * s.W;
    const auto x = random_nhwc<T>(rng, static_cast<std::size_t>(s.B) * P * ldx);
    const std::size_t ny = static_cast<std::size_t>(s.B) * P * ldy;
    DeviceBuffer dx = upload(x), dy = upload(nan_filled<T>(ny));
    CopyChannelsParams<T> p;
    p.x = dx.as<T>() + cx0;
    p.ldx = ldx;
    p.y = dy.as<T>() + cy0;
    p.ldy = ldy;
    p.batch = s.B, p.pixels = static_cast<int>(P), p.c = s.C;
    copy_channels<T>(p, nullptr);
    YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ref(static_cast<std::size_t>(s.B) * P * s.C);
    for (long long i = 0; i < s.B * P; ++i)
      for (int c = 0; c < s.C; ++c) ref[i * s.C + c] = to_float(x[i * ldx + cx0 + c]);
    check_slice(download<T>(dy, ny), ref, s.B, P, ldy, cy0, s.C);
  }
}

template <typename T>
void run_cast() {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(0.01f, 1.f);
  for (const Shape& s : kShapes) {
    const int C = 3, ldy = 3;
    INFO("B " << s.B << " H " << s.H << " W " << s.W);
    std::vector<float> x(static_cast<std::size_t>(s.B) * C * s.H * s.W);
    for (auto& v : x) v = u(rng);
    const std::size_t ny = static_cast<std::size_t>(s.B) * s.H * s.W * ldy;
    DeviceBuffer dx = upload(x), dy = upload(nan_filled<T>(ny));
    NchwToNhwcParams<T> p;
    p.x = dx.as<float>();
    p.y = dy.as<T>();
    p.ldy = ldy;
    p.batch = s.B, p.c = C, p.h = s.H, p.w = s.W;
    nchw_to_nhwc<T>(p, nullptr);
    YOLO12_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ref(ny);
    const std::size_t plane = static_cast<std::size_t>(s.H) * s.W;
    for (int n = 0; n < s.B; ++n)
      for (std::size_t yx = 0; yx < plane; ++yx)
        for (int c = 0; c < C; ++c)
          ref[(n * plane + yx) * C + c] = to_float(from_float<T>(x[(static_cast<std::size_t>(n) * C + c) * plane + yx]));
    check_slice(download<T>(dy, ny), ref, s.B, static_cast<long long>(plane), ldy, 0, C);
  }
}

}  // namespace

TEST_CASE("upsample_nearest matches the CPU loop", "[gpu][elementwise]") {
  SECTION("fp32") { run_upsample<float>(); }
  SECTION("fp16") { run_upsample<__half>(); }
}

TEST_CASE("max_pool_same matches the CPU loop, padding never wins", "[gpu][elementwise]") {
  SECTION("fp32") { run_maxpool<float>(); }
  SECTION("fp16") { run_maxpool<__half>(); }
}

TEST_CASE("copy_channels moves exactly the slice", "[gpu][elementwise]") {
  SECTION("fp32") { run_copy<float>(); }
  SECTION("fp16") { run_copy<__half>(); }
}

TEST_CASE("nchw_to_nhwc casts and transposes", "[gpu][elementwise]") {
  SECTION("fp32") { run_cast<float>(); }
  SECTION("fp16") { run_cast<__half>(); }
}
