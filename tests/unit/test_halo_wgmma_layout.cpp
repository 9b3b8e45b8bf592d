// tests/unit/test_halo_wgmma_layout.cpp - conv2d_halo_wgmma's layout arithmetic (src/backends/cuda/
// halo_wgmma_layout.hpp) replayed on the CPU: the kernel's copy loops fill each pipeline stage, an emulation of
// wgmma reads its operands from the descriptors' start, lbo and sbo (K-major, no swizzle: core matrices of 8
// rows x 16 bytes, rows 16 bytes apart), the accumulators are staged by their register positions, and the
// staged rows are stored to the pixels staged_pixel names. The result must equal a direct 3x3 conv exactly
// (small integer inputs: every sum is exact in float), at stride 1 and 2. Runs without a GPU; test_conv [halo_wgmma]
// runs the kernel itself against the reference on one.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/halo_wgmma_layout.hpp"
#include "catch.hpp"

namespace hw = yolo12::cuda::halo_wgmma;

namespace {

struct Shape {
  int batch, h, w, cin, cout, pad, stride;
  int x_c0 = 0, x_extra = 0;  // x is a channel slice [x_c0, x_c0 + cin) of rows of ldx = x_c0 + cin + x_extra
  int ho() const { return (h + 2 * pad - 3) / stride + 1; }
  int wo() const { return (w + 2 * pad - 3) / stride + 1; }
  int ldx() const { return x_c0 + cin + x_extra; }
  int k_pad() const { return (9 * cin + 31) / 32 * 32; }  // the packed weight row (cin_pad = cin: a multiple of 16)
  std::string describe() const {
    return std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " " + std::to_string(cin) +
           "->" + std::to_string(cout) + " pad " + std::to_string(pad) + " stride " + std::to_string(stride) +
           " slice " + std::to_string(x_c0) + "+" + std::to_string(x_extra);
  }
};

struct Data {
  std::vector<float> x;  // (batch, h, w, ldx)
  std::vector<float> w;  // (cout, k_pad): K column tap * cin + ci, zero past 9 * cin
};

Data make_data(const Shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3);
  Data d;
  d.x.resize(static_cast<std::size_t>(s.batch) * s.h * s.w * s.ldx());
  for (float& e : d.x) e = static_cast<float>(v(rng));
  d.w.assign(static_cast<std::size_t>(s.cout) * s.k_pad(), 0.f);
  for (int n = 0; n < s.cout; ++n)
    for (int k = 0; k < 9 * s.cin; ++k) d.w[static_cast<std::size_t>(n) * s.k_pad() + k] = static_cast<float>(v(rng));
  return d;
}

// The direct conv: (batch, ho, wo, cout).
std::vector<double> reference(const Shape& s, const Data& d) {
  std::vector<double> y(static_cast<std::size_t>(s.batch) * s.ho() * s.wo() * s.cout, 0.0);
  for (int b = 0; b < s.batch; ++b)
    for (int oy = 0; oy < s.ho(); ++oy)
      for (int ox = 0; ox < s.wo(); ++ox)
        for (int n = 0; n < s.cout; ++n) {
          double acc = 0.0;
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = oy * s.stride - s.pad + ky, ix = ox * s.stride - s.pad + kx;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              const float* xp = &d.x[((static_cast<std::size_t>(b) * s.h + iy) * s.w + ix) * s.ldx() + s.x_c0];
              const float* wp = &d.w[static_cast<std::size_t>(n) * s.k_pad() + (ky * 3 + kx) * s.cin];
              for (int ci = 0; ci < s.cin; ++ci) acc += static_cast<double>(xp[ci]) * wp[ci];
            }
          y[((static_cast<std::size_t>(b) * s.ho() + oy) * s.wo() + ox) * s.cout + n] = acc;
        }
  return y;
}

// The kernel's work replayed block by block: returns (batch, ho, wo, cout), NaN where nothing was stored.
// Fails a check where a copy slot is written other than once, an operand is read outside its region or from
// a slot no copy wrote, or an output element is stored other than once.
template <int BN, int P, int S>
std::vector<float> replay(const Shape& s, const Data& d) {
  using T = hw::Tile<P, S>;
  using G = hw::Geom<BN, P, S>;
  constexpr int kHaloItems = (T::kCopies + hw::kThreads - 1) / hw::kThreads;
  const int tiles_x = (s.wo() + T::kTW - 1) / T::kTW, tiles_y = (s.ho() + hw::kTH - 1) / hw::kTH;
  const int col_tiles = (s.cout + BN - 1) / BN, blocks = s.batch * tiles_x * tiles_y * col_tiles;
  const int k_stages = s.cin / hw::kCK;
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.ho() * s.wo() * s.cout, NAN);
  std::vector<int> stores(y.size(), 0);
  bool copies_once = true, reads_inside = true, stores_inside = true;
  for (int block = 0; block < blocks; ++block) {
    const hw::BlockTile bt = hw::block_tile(block, tiles_x, tiles_y, col_tiles, T::kTW, BN);
    const float* ximg = d.x.data() + static_cast<std::size_t>(bt.img) * s.h * s.w * s.ldx() + s.x_c0;
    std::vector<float> acc(static_cast<std::size_t>(2) * P * 64 * BN, 0.f);  // (wgi, q, e, n)
    for (int kt = 0; kt < k_stages; ++kt) {
      const int c0 = kt * hw::kCK;
      std::vector<float> stage(G::kStage / 2, NAN);   // one half per 2 bytes
      std::vector<int> written(G::kStage / 16, 0);    // per 16-byte slot
      for (int tid = 0; tid < hw::kThreads; ++tid) {  // the kernel's load_stage, thread by thread
        for (int j = 0; j < kHaloItems; ++j) {
          const int i = tid + j * hw::kThreads;
          if (!(j + 1 < kHaloItems || i < T::kCopies)) continue;
          int slot;
          const int src = hw::halo_src<P, S>(i, bt.oy0, bt.ox0, s.pad, s.h, s.w, s.ldx(), slot);
          if (slot < 0 || slot >= T::kCopies) {
            copies_once = false;
            continue;
          }
          ++written[slot];
          for (int e = 0; e < 8; ++e) stage[slot * 8 + e] = src >= 0 ? ximg[src + c0 + e] : 0.f;
        }
        for (int i = tid; i < G::kBCopies; i += hw::kThreads) {
          int n, kcol, slot;
          hw::b_copy<BN>(i, s.cin, n, kcol, slot);
          if (slot < 0 || slot >= G::kBCopies) {
            copies_once = false;
            continue;
          }
          const bool ok = bt.n0 + n < s.cout;
          ++written[T::kHaloBytes / 16 + slot];
          for (int e = 0; e < 8; ++e)
            stage[T::kHaloBytes / 2 + slot * 8 + e] =
                ok ? d.w[static_cast<std::size_t>(bt.n0 + n) * s.k_pad() + kcol + c0 + e] : 0.f;
        }
      }
      for (int slot = 0; slot < (T::kHaloBytes + G::kBBytes) / 16; ++slot)
        copies_once = copies_once && written[slot] == 1;
      // The MMAs: for each warpgroup, patch and tap, D (64 x BN) += A (64 x 16) * B (BN x 16)^T, element (r, k)
      // of an operand at start + (r / 8) sbo + (k / 8) lbo + (r % 8) 16 + (k % 8) 2 bytes.
      auto at = [&](int start, int lbo, int sbo, int r, int k, int lo, int hi) {
        const int byte = start + (r / 8) * sbo + (k / 8) * lbo + (r % 8) * 16 + (k % 8) * 2;
        if (byte < lo || byte + 2 > hi) {
          reads_inside = false;
          return 0.f;
        }
        return stage[byte / 2];
      };
      for (int wgi = 0; wgi < 2; ++wgi)
        for (int q = 0; q < P; ++q)
          for (int tap = 0; tap < hw::kTaps; ++tap) {
            const int a0 = hw::a_start<P, S>(wgi, q, tap), b0 = hw::b_start<BN, P, S>(tap);
            for (int m = 0; m < 64; ++m)
              for (int n = 0; n < BN; ++n) {
                float sum = 0.f;
                for (int k = 0; k < 16; ++k)
                  sum += at(a0, T::kALbo, T::kASbo, m, k, 0, T::kHaloBytes) *
                         at(b0, G::kBLbo, G::kBSbo, n, k, T::kHaloBytes, T::kHaloBytes + G::kBBytes);
                acc[((static_cast<std::size_t>(wgi) * P + q) * 64 + m) * BN + n] += sum;
              }
          }
    }
    // Staging: thread (warp, lane) of warpgroup wgi writes its registers at their positions.
    std::vector<float> cs(static_cast<std::size_t>(G::kCRows) * G::kCRow, NAN);
    for (int wgi = 0; wgi < 2; ++wgi)
      for (int q = 0; q < P; ++q)
        for (int t = 0; t < 128; ++t)
          for (int i = 0; i < BN / 2; ++i) {
            int e, col;
            hw::acc_position(t / 32, t % 32, i, e, col);
            const std::size_t row = static_cast<std::size_t>(wgi * P + q) * 64 + e;
            cs[row * G::kCRow + col] = acc[row * BN + col];
          }
    for (int r = 0; r < G::kCRows; ++r) {
      int dy, dx;
      hw::staged_pixel<P>(r, dy, dx);
      const int oy = bt.oy0 + dy, ox = bt.ox0 + dx;
      for (int c = 0; c < BN; ++c) {
        const int n = bt.n0 + c;
        if (oy >= s.ho() || ox >= s.wo() || n >= s.cout) continue;
        const std::size_t o = ((static_cast<std::size_t>(bt.img) * s.ho() + oy) * s.wo() + ox) * s.cout + n;
        if (o >= y.size()) {
          stores_inside = false;
          continue;
        }
        y[o] = cs[static_cast<std::size_t>(r) * G::kCRow + c];
        ++stores[o];
      }
    }
  }
  CHECK(copies_once);
  CHECK(reads_inside);
  CHECK(stores_inside);
  bool once = true;
  for (const int n : stores) once = once && n == 1;
  CHECK(once);
  return y;
}

template <int BN, int P>
void check_shape(const Shape& s, std::uint64_t seed) {
  INFO("tile 16x" << 8 * P << " x " << BN << ", " << s.describe());
  REQUIRE((s.stride == 1 || s.stride == 2));
  const Data d = make_data(s, seed);
  const std::vector<double> want = reference(s, d);
  const std::vector<float> got = s.stride == 1 ? replay<BN, P, 1>(s, d) : replay<BN, P, 2>(s, d);
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = got.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(static_cast<double>(got[i]) == want[i])) {
      ++bad;
      if (first == got.size()) first = i;
    }
  INFO("first mismatch at " << first);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("conv2d_halo_wgmma's layout replayed on the CPU computes the 3x3 conv", "[halo_wgmma][host]") {
  // Under one tile with one K stage; odd sizes across the 16 x 8 and 16 x 16 tile edges, batch 2; pad 0; a
  // channel slice of x; partial column tiles (200 channels in 48- and 192-wide tiles); several K stages.
  // Stride 1:
  check_shape<48, 1>({1, 7, 9, 16, 48, 1, 1}, 1);
  check_shape<48, 2>({1, 7, 9, 16, 48, 1, 1}, 2);
  check_shape<96, 1>({2, 17, 19, 32, 96, 1, 1}, 3);
  check_shape<96, 2>({2, 17, 19, 32, 96, 1, 1}, 4);
  check_shape<48, 2>({2, 17, 19, 32, 96, 1, 1}, 5);
  check_shape<64, 1>({1, 15, 23, 32, 64, 0, 1}, 6);
  check_shape<64, 2>({1, 15, 23, 32, 64, 0, 1, 8, 16}, 7);
  check_shape<48, 1>({1, 10, 12, 16, 200, 1, 1}, 8);
  check_shape<192, 1>({1, 10, 12, 16, 200, 1, 1}, 9);
  check_shape<128, 2>({1, 9, 9, 48, 128, 1, 1}, 10);
  check_shape<128, 1>({1, 20, 11, 16, 128, 1, 1, 16, 8}, 11);
  // Stride 2: even and odd input sizes (the last output column reads the odd plane's edge or the padding),
  // outputs across the tile edges, pad 0, a slice.
  check_shape<48, 1>({1, 7, 9, 16, 48, 1, 2}, 12);
  check_shape<64, 2>({2, 34, 37, 32, 64, 1, 2}, 13);
  check_shape<96, 1>({1, 40, 33, 16, 96, 1, 2}, 14);
  check_shape<96, 2>({1, 21, 50, 32, 96, 0, 2}, 15);
  check_shape<128, 2>({1, 18, 35, 16, 128, 1, 2, 8, 8}, 16);
  check_shape<192, 1>({1, 12, 20, 32, 192, 1, 2}, 17);
  check_shape<48, 2>({1, 33, 17, 16, 100, 1, 2}, 18);
}

TEST_CASE("conv2d_halo_wgmma's layout: registers, operands and shared memory", "[halo_wgmma][host]") {
  // The kernel stages registers 4j, 4j + 1 as one float2 at acc_position(4j), and 4j + 2, 4j + 3 eight rows
  // below; the 64 x 8 positions of a warpgroup's first 8 columns are each held once.
  std::vector<int> held(64 * 8, 0);
  for (int t = 0; t < 128; ++t)
    for (int j = 0; j < 4; ++j) {
      int e0, c0;
      hw::acc_position(t / 32, t % 32, 4 * j, e0, c0);
      for (int i = 0; i < 4; ++i) {
        int e, c;
        hw::acc_position(t / 32, t % 32, 4 * j + i, e, c);
        CHECK(e == e0 + 8 * (i / 2));
        CHECK(c == c0 + i % 2);
        if (j == 0) ++held[e * 8 + c];
      }
    }
  for (const int n : held) CHECK(n == 1);
  // Neighbouring copies 2j and 2j + 1 read the two 16-byte halves of one 32-byte run: one pixel's 16 channels,
  // one weight row's 16 K columns of a tap.
  bool sectors = true;
  for (int i = 0; i + 1 < hw::Tile<2, 2>::kCopies; i += 2) {
    int slot0, slot1;
    const int a0 = hw::halo_src<2, 2>(i, 16, 8, 1, 40, 40, 96, slot0);
    const int a1 = hw::halo_src<2, 2>(i + 1, 16, 8, 1, 40, 40, 96, slot1);
    sectors = sectors && (a0 < 0 ? a1 < 0 : a1 == a0 + 8) && slot1 == slot0 + hw::Tile<2, 2>::kPix;
  }
  for (int i = 0; i + 1 < hw::Geom<96, 1>::kBCopies; i += 2) {
    int n0, k0, s0, n1, k1, s1;
    hw::b_copy<96>(i, 96, n0, k0, s0);
    hw::b_copy<96>(i + 1, 96, n1, k1, s1);
    sectors = sectors && n1 == n0 && k1 == k0 + 8 && s1 == s0 + 96;
  }
  CHECK(sectors);
  // Descriptor fields are 14 bits of bytes / 16: every lbo and sbo, and every stage set, fit.
  CHECK(hw::Tile<2>::kALbo / 16 < (1 << 14));
  CHECK(hw::Tile<2, 2>::kALbo / 16 < (1 << 14));
  CHECK(hw::Geom<192, 1>::kBLbo / 16 < (1 << 14));
  // At stride 2 the odd plane's last column is never read: the highest column a tap reads is 8P of the even plane.
  CHECK(hw::Tile<2, 2>::kPW == 17);
  CHECK(hw::Tile<2, 2>::kHH == 33);
  // The plans the kernel offers fit the H200's 227 KiB of shared memory per block (192 columns: 3 stages only).
  constexpr int kOptin = 232448;
  CHECK(hw::Geom<192, 1>::bytes(3) <= kOptin);
  CHECK(hw::Geom<192, 1>::bytes(4) > kOptin);
  CHECK(hw::Geom<128, 2>::bytes(4) <= kOptin);
  CHECK(hw::Geom<96, 2>::bytes(4) <= kOptin);
  CHECK(hw::Geom<192, 1, 2>::bytes(3) <= kOptin);
  CHECK(hw::Geom<128, 2, 2>::bytes(3) <= kOptin);
  CHECK(hw::Geom<128, 2, 2>::bytes(4) > kOptin);
  // The 96 x 2 tile of yolo12x's 3x3 96->96: 3 stages and the C tile within half an SM (two blocks per SM).
  CHECK(2 * (hw::Geom<96, 2>::bytes(3) + 1024) <= 233472);
}
