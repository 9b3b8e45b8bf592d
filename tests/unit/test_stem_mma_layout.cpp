// tests/unit/test_stem_mma_layout.cpp - conv2d_stem_mma's layout arithmetic (src/backends/cuda/stem_mma_layout.hpp)
// replayed on the CPU: the kernel's patch copy, the A fragments gathered from the patch at the kernel's offsets,
// the B fragments from the packed weights, an emulation of mma.sync m16n8k16 that rebuilds the matrices from all
// 32 lanes' fragments, and the stores of the D fragments. The result must equal a direct 3x3 stride-2 conv
// exactly (small integer inputs). Runs without a GPU; test_conv [stem_mma] runs the kernel itself on one.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/stem_mma_layout.hpp"
#include "catch.hpp"

namespace sm = yolo12::cuda::stem_mma;

namespace {

constexpr int kCin = 3, kStride = 2, kCinPad = 8;
using G = sm::Geom<kCin, kStride>;

struct Shape {
  int batch, h, w, cout, pad;
  int ldx = kCin;  // x rows of ldx halves, the 3 channels first
  int ho() const { return (h + 2 * pad - 3) / kStride + 1; }
  int wo() const { return (w + 2 * pad - 3) / kStride + 1; }
  int k_pad() const { return (9 * kCinPad + 31) / 32 * 32; }
  std::string describe() const {
    return std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " -> " + std::to_string(cout) +
           " pad " + std::to_string(pad) + " ldx " + std::to_string(ldx);
  }
};

// The replay: (batch, ho, wo, cout), NaN where nothing was stored; checks every fragment element is one matrix
// element, held by one register, and every output is stored once.
std::vector<float> replay(const Shape& s, const std::vector<float>& x, const std::vector<float>& w) {
  const int tiles_x = (s.wo() + sm::kTW - 1) / sm::kTW, tiles_y = (s.ho() + sm::kTH - 1) / sm::kTH;
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.ho() * s.wo() * s.cout, NAN);
  std::vector<int> stores(y.size(), 0);
  const int nt = (s.cout + 7) / 8;
  bool a_once = true, b_once = true, inside = true;
  for (int t = 0; t < s.batch * tiles_x * tiles_y; ++t) {
    const int per_image = tiles_x * tiles_y, img = t / per_image, rest = t - img * per_image;
    const int oy0 = (rest / tiles_x) * sm::kTH, ox0 = (rest % tiles_x) * sm::kTW;
    const int iy0 = oy0 * kStride - s.pad, ix0 = ox0 * kStride - s.pad;
    std::vector<float> patch(G::kPatch, NAN);
    for (int pr = 0; pr < G::kPH; ++pr)
      for (int i = 0; i < G::kRun; ++i) {
        int px, c;
        sm::patch_element<kCin>(i, px, c);
        const int iy = iy0 + pr, ix = ix0 + px;
        const bool in = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
        patch[pr * G::kRS + i] = in ? x[((static_cast<std::size_t>(img) * s.h + iy) * s.w + ix) * s.ldx + c] : 0.f;
      }
    for (int warp = 0; warp < sm::kWarps; ++warp)
      for (int i = 0; i < sm::kM16PerWarp; ++i) {
        int oy_l, ox_l;
        sm::m16_origin(warp + sm::kWarps * i, oy_l, ox_l);
        const int oy = oy0 + oy_l;
        if (oy >= s.ho() || ox0 + ox_l >= s.wo()) continue;
        // A (16 x 32) and B (8 nt x 32) as the lanes' fragments hold them.
        std::vector<float> a(16 * 32, NAN), b(static_cast<std::size_t>(8) * nt * 32, NAN);
        std::vector<int> a_held(16 * 32, 0), b_held(static_cast<std::size_t>(8) * nt * 32, 0);
        for (int lane = 0; lane < 32; ++lane)
          for (int st = 0; st < 2; ++st) {
            for (int r = 0; r < 4; ++r)
              for (int hh = 0; hh < 2; ++hh) {
                int row, k;
                sm::a_element(lane, st, r, hh, row, k);
                float v = 0.f;
                if (k < G::kKK) {
                  const int off = sm::pixel_offset<kCin, kStride>(oy_l, ox_l + row) + sm::k_offset<kCin, kStride>(k);
                  if (off < 0 || off >= G::kPatch)
                    inside = false;
                  else
                    v = patch[off];
                }
                a[row * 32 + k] = v;
                ++a_held[row * 32 + k];
              }
            for (int j = 0; j < nt; ++j)
              for (int r = 0; r < 2; ++r)
                for (int hh = 0; hh < 2; ++hh) {
                  int n, k;
                  sm::b_element(lane, st, j, r, hh, n, k);
                  const float v = n < s.cout && k < G::kKK
                                      ? w[static_cast<std::size_t>(sm::w_offset<kCin>(n, k, s.k_pad(), kCinPad))]
                                      : 0.f;
                  b[static_cast<std::size_t>(n) * 32 + k] = v;
                  ++b_held[static_cast<std::size_t>(n) * 32 + k];
                }
          }
        for (const int n : a_held) a_once = a_once && n == 1;
        for (const int n : b_held) b_once = b_once && n == 1;
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < nt; ++j)
            for (int r = 0; r < 4; ++r) {
              int row, n;
              sm::d_element(lane, j, r, row, n);
              float d = 0.f;
              for (int k = 0; k < 32; ++k) d += a[row * 32 + k] * b[static_cast<std::size_t>(n) * 32 + k];
              const int ox = ox0 + ox_l + row;
              if (ox >= s.wo() || n >= s.cout) continue;
              const std::size_t o = ((static_cast<std::size_t>(img) * s.ho() + oy) * s.wo() + ox) * s.cout + n;
              y[o] = d;
              ++stores[o];
            }
      }
  }
  CHECK(a_once);
  CHECK(b_once);
  CHECK(inside);
  bool once = true;
  for (const int n : stores) once = once && n == 1;
  CHECK(once);
  return y;
}

void check_shape(const Shape& s, std::uint64_t seed) {
  INFO(s.describe());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3);
  std::vector<float> x(static_cast<std::size_t>(s.batch) * s.h * s.w * s.ldx);
  for (float& e : x) e = static_cast<float>(v(rng));
  std::vector<float> w(static_cast<std::size_t>(s.cout) * s.k_pad(), 0.f);  // packed: tap * 8 + c
  for (int n = 0; n < s.cout; ++n)
    for (int tap = 0; tap < 9; ++tap)
      for (int c = 0; c < kCin; ++c)
        w[static_cast<std::size_t>(n) * s.k_pad() + tap * kCinPad + c] = static_cast<float>(v(rng));
  const std::vector<float> got = replay(s, x, w);
  std::size_t bad = 0;
  for (int b = 0; b < s.batch; ++b)
    for (int oy = 0; oy < s.ho(); ++oy)
      for (int ox = 0; ox < s.wo(); ++ox)
        for (int n = 0; n < s.cout; ++n) {
          double want = 0.0;
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = oy * kStride - s.pad + ky, ix = ox * kStride - s.pad + kx;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              for (int c = 0; c < kCin; ++c)
                want += static_cast<double>(x[((static_cast<std::size_t>(b) * s.h + iy) * s.w + ix) * s.ldx + c]) *
                        w[static_cast<std::size_t>(n) * s.k_pad() + (ky * 3 + kx) * kCinPad + c];
            }
          const float g = got[((static_cast<std::size_t>(b) * s.ho() + oy) * s.wo() + ox) * s.cout + n];
          bad += !(static_cast<double>(g) == want);
        }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("conv2d_stem_mma's layout replayed on the CPU computes the stem conv", "[stem_mma][host]") {
  check_shape({1, 20, 30, 16, 1}, 1);      // under one tile
  check_shape({2, 40, 150, 16, 1}, 2);     // across the 8 x 64 tile edges, batch 2
  check_shape({1, 33, 129, 96, 1}, 3);     // odd sizes, yolo12x's 96 channels
  check_shape({1, 24, 70, 20, 0}, 4);      // pad 0, c_out not a multiple of 8
  check_shape({1, 17, 40, 128, 1, 8}, 5);  // 128 channels, x rows of 8 halves
  check_shape({1, 1, 1, 32, 1}, 6);        // one pixel
}

TEST_CASE("conv2d_stem_mma's layout: the patch and the fragments", "[stem_mma][host]") {
  CHECK(G::kKK == 27);
  CHECK(G::kPH == 17);
  CHECK(G::kPW == 129);
  CHECK(G::kRS % 2 == 0);
  CHECK(G::kPatch * 2 <= 48 * 1024);  // static shared memory
  CHECK(sm::kM16 % sm::kWarps == 0);
  // The kernel keeps one patch offset per K column for registers r and r + 1 (r even): they hold the same K
  // columns of rows lane / 4 and lane / 4 + 8.
  bool same_k = true;
  for (int lane = 0; lane < 32; ++lane)
    for (int st = 0; st < 2; ++st)
      for (int r = 0; r < 4; ++r)
        for (int h = 0; h < 2; ++h) {
          int row, k, row0, k0;
          sm::a_element(lane, st, r, h, row, k);
          sm::a_element(lane, st, 2 * (r / 2), h, row0, k0);
          same_k = same_k && k == k0 && row == row0 + 8 * (r % 2);
        }
  CHECK(same_k);
  // The farthest element a tile reads: the last pixel's last tap.
  CHECK(sm::pixel_offset<kCin, kStride>(sm::kTH - 1, sm::kTW - 1) + sm::k_offset<kCin, kStride>(G::kKK - 1) <
        G::kPatch);
}
