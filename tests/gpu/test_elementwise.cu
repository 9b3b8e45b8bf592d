// tests/gpu/test_elementwise.cu - what the elementwise kernels do outside the op table: the
// NCHW->NHWC cast of forward_raw's input, fp32 and fp16, and max_pool_can_implement. Upsample,
// max-pool and copy on many shapes and slices are the shared op suite's (tests/ops, test_ops_gpu).
// Outputs are poisoned with NaN and every element outside the written slice must keep its poison
// (guard check); every element inside must match exactly.
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

TEST_CASE("max_pool_can_implement takes odd kernels only", "[gpu][elementwise]") {
  CHECK(max_pool_can_implement(1));
  CHECK(max_pool_can_implement(5));
  CHECK_FALSE(max_pool_can_implement(4));
  CHECK_FALSE(max_pool_can_implement(0));
}

TEST_CASE("nchw_to_nhwc casts and transposes", "[gpu][elementwise]") {
  SECTION("fp32") { run_cast<float>(); }
  SECTION("fp16") { run_cast<__half>(); }
}
