// tests/unit/test_stem_mma_layout.cpp - conv2d_stem_mma's layout arithmetic (src/backends/cuda/stem_mma_layout.hpp)
// replayed on the CPU: the kernel's tile walk, its patch as stem_patch.cuh writes it (the rows' padding NaN, so a
// read of it reaches the output), the A fragments read from the patch at the kernel's offsets, the B fragments from
// the packed weights, an emulation of mma.sync m16n8k16 that rebuilds the matrices from all 32 lanes' fragments,
// and the stores of the D fragments: straight to the output, or (16-byte output views) through the warp's stage
// and its 16-byte chunks. The result must equal a direct 3x3 stride-2 conv exactly (small integer inputs). Runs
// without a GPU; test_conv [stem_mma] runs the kernel itself on one.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/stem_mma_layout.hpp"
#include "catch.hpp"

namespace sm = yolo12::cuda::stem_mma;

namespace {

constexpr int kCinPad = 8;
using G = sm::Geom;

struct Shape {
  int batch, h, w, cout, pad;
  int ldx = sm::kCin;  // x rows of ldx halves, the 3 channels first
  int ho() const { return (h + 2 * pad - 3) / sm::kStride + 1; }
  int wo() const { return (w + 2 * pad - 3) / sm::kStride + 1; }
  int k_pad() const { return (9 * kCinPad + 31) / 32 * 32; }
  std::string describe() const {
    return std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " -> " + std::to_string(cout) +
           " pad " + std::to_string(pad) + " ldx " + std::to_string(ldx);
  }
};

// The replay for NT n8 blocks: (batch, ho, wo, cout), NaN where nothing was stored. Checks that every fragment
// element is one matrix element held by one register, that every read is inside the patch, that every staged value
// is written once before its chunk is stored, and that every output is stored once.
template <int NT>
std::vector<float> replay(const Shape& s, const std::vector<float>& x, const std::vector<float>& w, bool staged) {
  const int tiles_x = (s.wo() + sm::kTW - 1) / sm::kTW, tiles_y = (s.ho() + sm::kTH - 1) / sm::kTH;
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.ho() * s.wo() * s.cout, NAN);
  std::vector<int> stores(y.size(), 0);
  bool a_once = true, b_once = true, inside = true, stage_once = true;
  // B (8 NT x 32) as the lanes' fragments hold it: the same for every tile. The fragments are built as the kernel
  // builds them, with a weight's 16 bits standing for its packed offset + 1 (0: a zero element): by b_fragments in
  // each lane's registers, or (b_in_smem) by the block's threads into shared memory at b_smem_index, each lane then
  // reading block j's four registers as one 16-byte load.
  const auto bits = [](long long o) { return static_cast<std::uint32_t>(o + 1); };
  std::vector<float> b(static_cast<std::size_t>(8) * NT * 32, NAN);
  std::vector<int> b_held(b.size(), 0);
  std::vector<std::uint32_t> b_s;
  if (sm::b_in_smem<NT>()) {
    b_s.assign(static_cast<std::size_t>(NT) * 32 * 4, 0xdeadbeefu);
    std::vector<int> written(b_s.size(), 0);
    for (int i = 0; i < NT * 32 * 4; ++i) {  // the kernel's loop over its threads' shares
      const int j = i / 128, l = i / 4 % 32, st = i / 2 % 2, r = i % 2;
      const int at = sm::b_smem_index(j, l, st, r);
      REQUIRE(at >= 0);
      REQUIRE(at < NT * 32 * 4);
      b_s[static_cast<std::size_t>(at)] = sm::b_register(l, st, j, r, s.cout, s.k_pad(), kCinPad, bits);
      ++written[static_cast<std::size_t>(at)];
    }
    for (const int n : written) b_once = b_once && n == 1;
  }
  for (int lane = 0; lane < 32; ++lane) {
    std::uint32_t bf[NT][2][2];
    if (sm::b_in_smem<NT>()) {
      for (int j = 0; j < NT; ++j) {
        const int v0 = sm::b_smem_index(j, lane, 0, 0);  // one 16-byte load: 4-aligned, the four registers in order
        CHECK(v0 % 4 == 0);
        for (int st = 0; st < 2; ++st)
          for (int r = 0; r < 2; ++r) {
            CHECK(sm::b_smem_index(j, lane, st, r) == v0 + 2 * st + r);
            bf[j][st][r] = b_s[static_cast<std::size_t>(v0 + 2 * st + r)];
          }
      }
    } else {
      sm::b_fragments<NT>(lane, s.cout, s.k_pad(), kCinPad, bits, bf);
    }
    for (int st = 0; st < 2; ++st)
      for (int j = 0; j < NT; ++j)
        for (int r = 0; r < 2; ++r)
          for (int hh = 0; hh < 2; ++hh) {
            int n, k;
            sm::b_element(lane, st, j, r, hh, n, k);
            const std::uint32_t id = (bf[j][st][r] >> (16 * hh)) & 0xffffu;
            b[static_cast<std::size_t>(n) * 32 + k] = id == 0 ? 0.f : w[id - 1];
            ++b_held[static_cast<std::size_t>(n) * 32 + k];
          }
  }
  for (const int n : b_held) b_once = b_once && n == 1;
  const long long tiles = 1LL * s.batch * tiles_x * tiles_y;
  for (long long t = 0; t < tiles; ++t) {
    const sm::Tile tile = sm::tile_of(t, tiles_x, tiles_y);
    int iy0, ix0;
    sm::patch_origin(tile, s.pad, iy0, ix0);
    // The patch as stem_patch.cuh writes it: value f < kPW * 3 of row r is input pixel (iy0 + r, ix0 + f / 3),
    // channel f % 3, zero outside the image; the row's padding is written as zeros there, NaN here.
    std::vector<float> patch(static_cast<std::size_t>(G::kPH) * G::kRS, NAN);
    for (int pr = 0; pr < G::kPH; ++pr)
      for (int f = 0; f < G::kPW * G::kCin; ++f) {
        const int iy = iy0 + pr, ix = ix0 + f / 3, c = f % 3;
        const bool in = iy >= 0 && iy < s.h && ix >= 0 && ix < s.w;
        patch[static_cast<std::size_t>(pr) * G::kRS + f] =
            in ? x[((static_cast<std::size_t>(tile.n) * s.h + iy) * s.w + ix) * s.ldx + c] : 0.f;
      }
    for (int warp = 0; warp < sm::kWarps; ++warp)
      for (int i = 0; i < sm::kM16PerWarp; ++i) {
        int oy_l, ox_l;
        sm::m16_origin(warp + sm::kWarps * i, oy_l, ox_l);
        const int oy = tile.oy0 + oy_l, ox_first = tile.ox0 + ox_l;
        if (oy >= s.ho() || ox_first >= s.wo()) continue;
        // A (16 x 32) as the lanes' fragments hold it: register r of step st is one 4-byte load of two halves.
        std::vector<float> a(16 * 32, NAN);
        std::vector<int> a_held(16 * 32, 0);
        for (int lane = 0; lane < 32; ++lane)
          for (int st = 0; st < 2; ++st)
            for (int r = 0; r < 4; ++r) {
              int row, k, koff[2][2];
              sm::a_element(lane, st, r, 0, row, k);
              sm::lane_k_offsets(lane, G::kRS, koff);  // the kernel's per-lane offsets
              const int off = sm::pixel_offset(oy_l, ox_l + row) + koff[st][r / 2];
              if (off < 0 || off + 1 >= G::kPH * G::kRS || off % 2 != 0) {
                inside = false;
                continue;
              }
              for (int hh = 0; hh < 2; ++hh) {
                int row_h, k_h;
                sm::a_element(lane, st, r, hh, row_h, k_h);
                a[row_h * 32 + k_h] = patch[static_cast<std::size_t>(off + hh)];
                ++a_held[row_h * 32 + k_h];
              }
            }
        for (const int n : a_held) a_once = a_once && n == 1;
        const long long m0 = (static_cast<long long>(tile.n) * s.ho() + oy) * s.wo() + ox_first;
        std::vector<float> stage(16 * sm::Smem<NT>::kStageRS, NAN);
        std::vector<int> stage_writes(stage.size(), 0);
        for (int lane = 0; lane < 32; ++lane)
          for (int j = 0; j < NT; ++j)
            for (int r = 0; r < 4; ++r) {
              int row, n;
              sm::d_element(lane, j, r, row, n);
              float d = 0.f;
              for (int k = 0; k < 32; ++k) d += a[row * 32 + k] * b[static_cast<std::size_t>(n) * 32 + k];
              if (staged) {
                const int at = sm::stage_offset<NT>(row, n);
                stage[at] = d;
                ++stage_writes[at];
                continue;
              }
              if (ox_first + row >= s.wo() || n >= s.cout) continue;
              const std::size_t o = static_cast<std::size_t>(m0 + row) * s.cout + n;
              y[o] = d;
              ++stores[o];
            }
        if (!staged) continue;
        for (int row = 0; row < 16; ++row)
          for (int n = 0; n < 8 * NT; ++n) stage_once = stage_once && stage_writes[sm::stage_offset<NT>(row, n)] == 1;
        const int chunks = s.cout / 8;
        for (int c = 0; c < 16 * chunks; ++c) {
          int row, c0;
          sm::stage_chunk(c, chunks, row, c0);
          if (ox_first + row >= s.wo()) continue;
          for (int e = 0; e < 8; ++e) {
            const std::size_t o = static_cast<std::size_t>(m0 + row) * s.cout + c0 + e;
            y[o] = stage[sm::stage_offset<NT>(row, c0 + e)];
            ++stores[o];
          }
        }
      }
  }
  CHECK(a_once);
  CHECK(b_once);
  CHECK(inside);
  CHECK(stage_once);
  bool once = true;
  for (const int n : stores) once = once && n == 1;
  CHECK(once);
  return y;
}

std::vector<float> replay_nt(const Shape& s, const std::vector<float>& x, const std::vector<float>& w, bool staged) {
  const int blocks8 = (s.cout + 7) / 8;  // as launch_conv2d_stem_mma picks NT
  if (blocks8 <= 2) return replay<2>(s, x, w, staged);
  if (blocks8 <= 4) return replay<4>(s, x, w, staged);
  if (blocks8 <= 6) return replay<6>(s, x, w, staged);
  if (blocks8 <= 8) return replay<8>(s, x, w, staged);
  if (blocks8 <= 12) return replay<12>(s, x, w, staged);
  return replay<16>(s, x, w, staged);
}

void check_shape(const Shape& s, std::uint64_t seed) {
  INFO(s.describe());
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3);
  std::vector<float> x(static_cast<std::size_t>(s.batch) * s.h * s.w * s.ldx);
  for (float& e : x) e = static_cast<float>(v(rng));
  std::vector<float> w(static_cast<std::size_t>(s.cout) * s.k_pad(), NAN);  // packed: tap * 8 + c; padding NaN
  for (int n = 0; n < s.cout; ++n)
    for (int tap = 0; tap < 9; ++tap)
      for (int c = 0; c < sm::kCin; ++c)
        w[static_cast<std::size_t>(n) * s.k_pad() + tap * kCinPad + c] = static_cast<float>(v(rng));
  for (const bool staged : {false, true}) {
    if (staged && s.cout % 8 != 0) continue;  // the kernel stages only 16-byte output views
    INFO((staged ? "staged stores" : "direct stores"));
    const std::vector<float> got = replay_nt(s, x, w, staged);
    std::size_t bad = 0;
    for (int b = 0; b < s.batch; ++b)
      for (int oy = 0; oy < s.ho(); ++oy)
        for (int ox = 0; ox < s.wo(); ++ox)
          for (int n = 0; n < s.cout; ++n) {
            double want = 0.0;
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = oy * sm::kStride - s.pad + ky, ix = ox * sm::kStride - s.pad + kx;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                for (int c = 0; c < sm::kCin; ++c)
                  want += static_cast<double>(x[((static_cast<std::size_t>(b) * s.h + iy) * s.w + ix) * s.ldx + c]) *
                          w[static_cast<std::size_t>(n) * s.k_pad() + (ky * 3 + kx) * kCinPad + c];
              }
            const float g = got[((static_cast<std::size_t>(b) * s.ho() + oy) * s.wo() + ox) * s.cout + n];
            bad += !(static_cast<double>(g) == want);
          }
    CHECK(bad == 0);
  }
}

}  // namespace

TEST_CASE("conv2d_stem_mma's layout replayed on the CPU computes the stem conv", "[stem_mma][host]") {
  check_shape({1, 20, 30, 16, 1}, 1);      // under one tile
  check_shape({2, 40, 150, 16, 1}, 2);     // across the 8 x 32 tile edges, batch 2
  check_shape({1, 33, 129, 96, 1}, 3);     // odd sizes, yolo12x's 96 channels
  check_shape({1, 36, 70, 48, 1}, 4);      // yolo12m's 48
  check_shape({1, 24, 70, 20, 0}, 5);      // pad 0, c_out not a multiple of 8
  check_shape({1, 17, 40, 128, 1, 8}, 6);  // 128 channels, x rows of 8 halves
  check_shape({1, 1, 1, 32, 1}, 7);        // one pixel
  check_shape({1, 30, 66, 64, 2}, 8);      // pad 2
}

TEST_CASE("conv2d_stem_mma's layout: the patch, the K layout and the fragments", "[stem_mma][host]") {
  STATIC_REQUIRE(G::kPH == 17);
  STATIC_REQUIRE(G::kRS % 8 == 0);
  STATIC_REQUIRE(G::kRS >= G::kPW * G::kCin);
  STATIC_REQUIRE(G::kRawRS >= G::kPW * G::kCin + 7);  // a raw row holds a row and its misalignment
  STATIC_REQUIRE(sm::Smem<16>::kBytes <= 227 * 1024 / 2);  // two blocks per SM at every instance (the launch bound)
  STATIC_REQUIRE(sm::Smem<8>::kBytes <= 227 * 1024 / 2);
  STATIC_REQUIRE(!sm::b_in_smem<8>());
  STATIC_REQUIRE(sm::b_in_smem<12>());
  STATIC_REQUIRE(sm::Smem<12>::kBytes == sm::Smem<12>::kBOff + 12 * 32 * 16);
  // The K layout: the 27 window values once each, as (tap, channel), every other column without a weight; every
  // column pair starts at an even offset in the window's tap row and both halves lie in the same tap row.
  int seen[9][3] = {};
  for (int k = 0; k < 32; ++k) {
    int tap, ci;
    if (sm::window_k_tap(k, tap, ci)) {
      ++seen[tap][ci];
      CHECK(sm::window_k_offset(k, G::kRS) == (tap / 3) * G::kRS + (tap % 3) * 3 + ci);
    }
    if (k % 2 == 0) {
      const int off = sm::window_k_offset(k, G::kRS);
      CHECK(off % 2 == 0);
      CHECK(off / G::kRS == (off + 1) / G::kRS);
    }
  }
  for (auto& tap : seen)
    for (const int n : tap) CHECK(n == 1);
  // The farthest value a tile reads: the last pixel's tap row 2, value 9, a patch value (not the row's padding).
  const int last = sm::pixel_offset(sm::kTH - 1, sm::kTW - 1) + sm::window_k_offset(29, G::kRS);
  CHECK(last < G::kPH * G::kRS);
  CHECK(last % G::kRS < G::kPW * G::kCin);
  // The rows of a D store to the stage (8 rows x 4 lanes) hit 32 distinct 4-byte banks.
  const auto distinct = [](auto offset_of) {
    bool bank[32] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int bk = (offset_of(lane) / 2) % 32;
      if (bank[bk]) return false;
      bank[bk] = true;
    }
    return true;
  };
  CHECK(distinct([](int lane) { return sm::stage_offset<2>(lane / 4, 2 * (lane % 4)); }));
  CHECK(distinct([](int lane) { return sm::stage_offset<6>(lane / 4, 8 + 2 * (lane % 4)); }));
  CHECK(distinct([](int lane) { return sm::stage_offset<12>(lane / 4, 16 + 2 * (lane % 4)); }));
  CHECK(distinct([](int lane) { return sm::stage_offset<16>(lane / 4 + 8, 2 * (lane % 4)); }));
}
