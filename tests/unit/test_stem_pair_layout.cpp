// tests/unit/test_stem_pair_layout.cpp - conv2d_stem_pair_f16's layout arithmetic (src/backends/cuda/
// stem_pair_layout.hpp) replayed on the CPU: the kernel's tile walk, its patch (as stem_patch.cuh writes it), the
// stem's threads computing the map from the patch (by FMAs, or by the MMAs of the mma stem), the A fragments read
// from the map and the B fragments from the weights at the layout's offsets, an emulation of mma.sync m16n8k16
// that places every lane's registers where the PTX fragment layout puts them, and the stores of the D fragments.
// With small integer inputs and no SiLU every value is exact, so the result must equal a direct computation of the
// two convs exactly. Also: each map value written once per tile and each output once, the patch read only in its
// rows' values (never their padding), the map only where this tile wrote it, and no read outside the patch, the
// map or the weights' K columns. Runs without a GPU; tests/gpu/test_stem_pair.cu runs the kernel itself on one.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/stem_pair_layout.hpp"
#include "catch.hpp"

namespace sp = yolo12::cuda::stem_pair;
namespace sm = yolo12::cuda::stem_mma;

namespace {

struct Shape {
  int batch = 1, h = 0, w = 0;
  int ldx = 3, x_c0 = 0;  // x rows of ldx values, the 3 channels from x_c0
  int hs() const { return (h + 2 - 3) / 2 + 1; }
  int ws() const { return (w + 2 - 3) / 2 + 1; }
  int ho() const { return (hs() + 2 - 3) / 2 + 1; }
  int wo() const { return (ws() + 2 - 3) / 2 + 1; }
  std::string describe() const {
    return std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " ldx " + std::to_string(ldx);
  }
};

// w: (c_out, c_in, 3, 3); x: (B, H, W, ldx) from channel c0; out: (B, Ho, Wo, c_out); 3x3, stride 2, pad 1.
std::vector<double> conv(const std::vector<double>& x, int batch, int h, int w, int ldx, int c0, int c_in,
                         const std::vector<double>& wt, const std::vector<double>& bias, int c_out) {
  const int ho = (h - 1) / 2 + 1, wo = (w - 1) / 2 + 1;
  std::vector<double> y(static_cast<std::size_t>(batch) * ho * wo * c_out);
  for (int n = 0; n < batch; ++n)
    for (int oy = 0; oy < ho; ++oy)
      for (int ox = 0; ox < wo; ++ox)
        for (int co = 0; co < c_out; ++co) {
          double s = bias[co];
          for (int ci = 0; ci < c_in; ++ci)
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int iy = 2 * oy - 1 + ky, ix = 2 * ox - 1 + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                s += x[((static_cast<std::size_t>(n) * h + iy) * w + ix) * ldx + c0 + ci] *
                     wt[((static_cast<std::size_t>(co) * c_in + ci) * 3 + ky) * 3 + kx];
              }
          y[((static_cast<std::size_t>(n) * ho + oy) * wo + ox) * c_out + co] = s;
        }
  return y;
}

// Step 2 on mma.sync (kStemMma): each m16 tile's A fragments read from the patch at stem_a_offset, the B fragments
// built from the packed weights as the kernel builds them (stem_mma's b_fragments), the MMAs
// emulated from all 32 lanes' registers, and the D fragments stored to the map at stem_acc_target.
template <int C1, int C2>
void stem_mma_replay(const sp::Tile& tile, int hs, int ws, const std::vector<float>& xin,
                     const std::vector<double>& w0, const std::vector<double>& b0, std::vector<float>& map,
                     std::vector<int>& map_writes, int& bad_reads) {
  using G = sp::Geom<C1, C2>;
  // The stem's weights packed as for every GEMM conv: (C1, kKPad) rows, tap * kCinPad + ci, the padding NaN.
  constexpr int kCinPad = 8, kKPad = 96;
  std::vector<float> packed(static_cast<std::size_t>(C1) * kKPad, NAN);
  for (int c = 0; c < C1; ++c)
    for (int tap = 0; tap < 9; ++tap)
      for (int ci = 0; ci < 3; ++ci)
        packed[c * kKPad + tap * kCinPad + ci] = static_cast<float>(w0[(c * 3 + ci) * 9 + tap]);
  // B[s][j][k][n], all lanes' registers: the packed weight of channel 8 j + n at K column 16 s + k, or zero.
  std::vector<float> B(2 * (C1 / 8) * 16 * 8, NAN);
  const auto b_at = [&](int s, int j, int k, int n) -> float& { return B[((s * (C1 / 8) + j) * 16 + k) * 8 + n]; };
  for (int lane = 0; lane < 32; ++lane) {  // the kernel's b_fragments; 16 bits standing for a packed offset + 1
    std::uint32_t bf[C1 / 8][2][2];
    sm::b_fragments<C1 / 8>(lane, C1, kKPad, kCinPad, [](long long o) { return static_cast<std::uint32_t>(o + 1); },
                            bf);
    for (int s = 0; s < 2; ++s)
      for (int j = 0; j < C1 / 8; ++j)
        for (int r = 0; r < 2; ++r)
          for (int h = 0; h < 2; ++h) {
            int n, k;
            sm::b_element(lane, s, j, r, h, n, k);
            const std::uint32_t id = (bf[j][s][r] >> (16 * h)) & 0xffffu;
            b_at(s, j, k - 16 * s, n - 8 * j) = id == 0 ? 0.f : packed[id - 1];
          }
  }
  for (const float v : B) bad_reads += std::isnan(v) ? 1 : 0;  // every B element placed by some lane
  for (int mt = 0; mt < G::kStemMTiles; ++mt) {
    float A[16][32];
    for (int s = 0; s < 2; ++s)
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < 4; ++r) {
          const int off = sp::stem_a_offset<C1, C2>(mt, lane, r, s);
          const int m = lane / 4 + (r % 2) * 8, k = 16 * s + 2 * (lane % 4) + (r / 2) * 8;
          if (off < 0 || off + 1 >= G::kIH * G::kXS || off % 2 != 0) {
            ++bad_reads;
            A[m][k] = A[m][k + 1] = NAN;
            continue;
          }
          A[m][k] = xin[off];
          A[m][k + 1] = xin[off + 1];
        }
    for (int j = 0; j < C1 / 8; ++j)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          int px, c;
          sp::stem_acc_target(mt, lane, j, e, px, c);
          if (px >= G::kSP) continue;
          const int m = px - 16 * mt, n = c - 8 * j;
          float sum = 0.f;
          for (int k = 0; k < 32; ++k) sum += A[m][k] * b_at(k / 16, j, k % 16, n);
          const int syl = px / G::kSW, sxl = px % G::kSW;
          const int sy = 2 * tile.oy0 - 1 + syl, sx = 2 * tile.ox0 - 1 + sxl;
          const bool inside = sy >= 0 && sy < hs && sx >= 0 && sx < ws;
          const std::size_t at = static_cast<std::size_t>(px) * G::kC1S + c;
          map[at] = inside ? sum + static_cast<float>(b0[c]) : 0.f;
          ++map_writes[at];
        }
  }
}

// The replay of conv2d_stem_pair_f16 (SiLU off): (B, Ho, Wo, C2).
template <int C1, int C2, bool kStemMma>
std::vector<double> replay(const Shape& s, const std::vector<double>& x, const std::vector<double>& w0,
                           const std::vector<double>& b0, const std::vector<double>& w1,
                           const std::vector<double>& b1) {
  using G = sp::Geom<C1, C2>;
  // The block's weights, as the kernel lays them out: the stem's (27, C1) [tap * 3 + ci][c], the next conv's
  // (C2, kK1S) [c][tap * C1 + ci] with its padding columns NaN (never read).
  std::vector<float> w0s(27 * C1), w1s(static_cast<std::size_t>(C2) * G::kK1S, NAN);
  for (int c = 0; c < C1; ++c)
    for (int tap = 0; tap < 9; ++tap)
      for (int ci = 0; ci < 3; ++ci) w0s[(tap * 3 + ci) * C1 + c] = static_cast<float>(w0[(c * 3 + ci) * 9 + tap]);
  for (int c = 0; c < C2; ++c)
    for (int tap = 0; tap < 9; ++tap)
      for (int ci = 0; ci < C1; ++ci)
        w1s[static_cast<std::size_t>(c) * G::kK1S + tap * C1 + ci] = static_cast<float>(w1[(c * C1 + ci) * 9 + tap]);

  const int hs = s.hs(), ws = s.ws(), ho = s.ho(), wo = s.wo();
  const int tiles_x = (wo + sp::kTW - 1) / sp::kTW, tiles_y = (ho + sp::kTH - 1) / sp::kTH;
  std::vector<double> y(static_cast<std::size_t>(s.batch) * ho * wo * C2, NAN);
  std::vector<int> stores(y.size(), 0);
  std::vector<float> xin(G::kIH * G::kXS), map(static_cast<std::size_t>(G::kSP) * G::kC1S);
  int bad_reads = 0, bad_slots = 0;
  const long long tiles = 1LL * tiles_x * tiles_y * s.batch;
  for (long long t = 0; t < tiles; ++t) {
    const sp::Tile tile = sp::tile_of(t, tiles_x, tiles_y);
    // 1. The patch as stem_patch.cuh writes it (raw copy and convert, or gather; run on the GPU by
    //    tests/gpu/test_stem_pair.cu): value f < kXV of row r is input pixel (iy0 + r, ix0 + f / 3), channel f % 3,
    //    zero outside the image. The kernel writes the row's padding (kXV..kXS) as zeros; here it is NaN, so a stem
    //    read of it reaches the output.
    int iy0, ix0;
    sp::patch_origin(tile, iy0, ix0);
    for (int r = 0; r < G::kIH; ++r)
      for (int f = 0; f < G::kXS; ++f) {
        const int gy = iy0 + r, gx = ix0 + f / 3, ci = f % 3;
        const bool inside = gy >= 0 && gy < s.h && gx >= 0 && gx < s.w;
        const std::size_t at = ((static_cast<std::size_t>(tile.n) * s.h + gy) * s.w + gx) * s.ldx + s.x_c0 + ci;
        xin[static_cast<std::size_t>(r) * G::kXS + f] = f >= G::kXV ? NAN : inside ? static_cast<float>(x[at]) : 0.f;
      }
    // 2. The map, item by item as the stem's threads take them; NaN first, so a value this tile did not write
    //    reaches the output. The window is read as the kernel reads it: kWin floats per tap row.
    std::fill(map.begin(), map.end(), NAN);
    std::vector<int> map_writes(static_cast<std::size_t>(G::kSP) * G::kC1S, 0);
    if (kStemMma) stem_mma_replay<C1, C2>(tile, hs, ws, xin, w0, b0, map, map_writes, bad_reads);
    for (int item = 0; item < (kStemMma ? 0 : G::kItems); ++item) {
      int cb, syl, sxl, window0;
      sp::stem_item<C1, C2>(item, cb, syl, sxl, window0);
      if (window0 % 2 != 0) ++bad_reads;  // the float2 reads need an even start
      float acc[G::kPP][G::kCB] = {};
      for (int ky = 0; ky < 3; ++ky) {
        const int row0 = window0 + ky * G::kXS;
        if (row0 % 2 != 0 || row0 < 0 || row0 + G::kWin > G::kIH * G::kXS) {
          ++bad_reads;
          continue;
        }
        for (int kx = 0; kx < 3; ++kx)
          for (int ci = 0; ci < 3; ++ci)
            for (int q = 0; q < G::kPP; ++q) {
              const int f = sp::window_tap(q, kx, ci);
              if (f < 0 || f >= G::kWin) {
                ++bad_reads;
                continue;
              }
              for (int j = 0; j < G::kCB; ++j)
                acc[q][j] = std::fma(xin[row0 + f], w0s[((ky * 3 + kx) * 3 + ci) * C1 + cb * G::kCB + j], acc[q][j]);
            }
      }
      const int sy = 2 * tile.oy0 - 1 + syl;
      for (int q = 0; q < G::kPP; ++q) {
        const int sx = 2 * tile.ox0 - 1 + sxl + q;
        const bool inside = sy >= 0 && sy < hs && sx >= 0 && sx < ws;
        const int px = syl * G::kSW + sxl + q;
        if (px < 0 || px >= G::kSP || sxl + q >= G::kSW) {
          ++bad_reads;
          continue;
        }
        for (int j = 0; j < G::kCB; ++j) {
          const std::size_t at = static_cast<std::size_t>(px) * G::kC1S + cb * G::kCB + j;
          map[at] = inside ? acc[q][j] + static_cast<float>(b0[cb * G::kCB + j]) : 0.f;
          ++map_writes[at];
        }
      }
    }
    for (int px = 0; px < G::kSP; ++px)  // every map value of the tile written exactly once
      for (int c = 0; c < C1; ++c) bad_slots += map_writes[static_cast<std::size_t>(px) * G::kC1S + c] != 1;
    // 3. The next conv: each warp's fragments, the MMAs emulated from all 32 lanes' registers.
    for (int warp = 0; warp < sp::kWarps; ++warp) {
      std::vector<float> acc(static_cast<std::size_t>(C2 / 8) * 32 * 4, 0.f);  // [j][lane][e]
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx)
          for (int cb = 0; cb < C1 / 16; ++cb) {
            float A[16][16];  // A[m][k]: from the registers, where mma.sync's fragment layout places them
            for (int lane = 0; lane < 32; ++lane)
              for (int r = 0; r < 4; ++r) {
                const int off = sp::a_offset<C1, C2>(warp, lane, r, ky, kx, cb);
                const int m = lane / 4 + (r % 2) * 8, k = 2 * (lane % 4) + (r / 2) * 8;
                if (off < 0 || off + 1 >= G::kSP * G::kC1S || off % 2 != 0) {
                  ++bad_reads;
                  A[m][k] = A[m][k + 1] = NAN;
                  continue;
                }
                A[m][k] = map[off];
                A[m][k + 1] = map[off + 1];
              }
            const int k0 = sp::k_of<C1, C2>(ky, kx, cb);
            for (int j = 0; j < C2 / 8; ++j) {
              float B[16][8];  // B[k][n]
              for (int lane = 0; lane < 32; ++lane)
                for (int r = 0; r < 2; ++r) {
                  const int off = sp::b_offset<C1, C2>(lane, r, j, k0);
                  const int k = 2 * (lane % 4) + 8 * r, n = lane / 4;
                  if (off < 0 || off % G::kK1S + 1 >= G::kK1 || off / G::kK1S >= C2 || off % 2 != 0) {
                    ++bad_reads;
                    B[k][n] = B[k + 1][n] = NAN;
                    continue;
                  }
                  B[k][n] = w1s[off];
                  B[k + 1][n] = w1s[off + 1];
                }
              for (int lane = 0; lane < 32; ++lane)
                for (int e = 0; e < 4; ++e) {
                  const int m = lane / 4 + (e >= 2 ? 8 : 0), n = 2 * (lane % 4) + e % 2;
                  float sum = 0.f;
                  for (int k = 0; k < 16; ++k) sum += A[m][k] * B[k][n];
                  acc[(static_cast<std::size_t>(j) * 32 + lane) * 4 + e] += sum;
                }
            }
          }
      for (int lane = 0; lane < 32; ++lane)
        for (int j = 0; j < C2 / 8; ++j)
          for (int e = 0; e < 4; e += 2) {
            int oy, ox, c;
            sp::acc_target(tile, warp, lane, j, e, oy, ox, c);
            if (oy >= ho || ox >= wo) continue;
            for (int i = 0; i < 2; ++i) {
              const std::size_t at = ((static_cast<std::size_t>(tile.n) * ho + oy) * wo + ox) * C2 + c + i;
              y[at] = acc[(static_cast<std::size_t>(j) * 32 + lane) * 4 + e + i] + b1[c + i];
              ++stores[at];
            }
          }
    }
  }
  CHECK(bad_reads == 0);
  CHECK(bad_slots == 0);
  int not_once = 0;
  for (int n : stores) not_once += n != 1;
  CHECK(not_once == 0);
  return y;
}

template <int C1, int C2>
void check(const Shape& s, std::uint64_t seed) {
  INFO(s.describe() << " 3->" << C1 << "->" << C2);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(-2, 2), bias(-3, 3);
  std::vector<double> x(static_cast<std::size_t>(s.batch) * s.h * s.w * s.ldx), w0(C1 * 27), b0(C1),
      w1(static_cast<std::size_t>(C2) * C1 * 9), b1(C2);
  for (auto& v : x) v = small(rng);
  for (auto& v : w0) v = small(rng);
  for (auto& v : w1) v = small(rng);
  for (auto& v : b0) v = bias(rng);
  for (auto& v : b1) v = bias(rng);
  const std::vector<double> map = conv(x, s.batch, s.h, s.w, s.ldx, s.x_c0, 3, w0, b0, C1);
  const std::vector<double> want = conv(map, s.batch, s.hs(), s.ws(), C1, 0, C1, w1, b1, C2);
  for (const bool stem_mma : {false, true}) {
    INFO((stem_mma ? "stem on mma.sync" : "stem by fp32 FMAs"));
    const std::vector<double> got =
        stem_mma ? replay<C1, C2, true>(s, x, w0, b0, w1, b1) : replay<C1, C2, false>(s, x, w0, b0, w1, b1);
    REQUIRE(got.size() == want.size());
    int differ = 0;
    double norm = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      differ += !(got[i] == want[i]);
      norm += want[i] * want[i];
    }
    CHECK(differ == 0);
    CHECK(norm > 0);
  }
}

}  // namespace

TEST_CASE("conv2d_stem_pair_f16's layout computes the two convs exactly, replayed on the CPU", "[stem_pair][layout]") {
  Shape s;
  s.h = s.w = 64;  // whole tiles (16 x 16 out)
  check<16, 32>(s, 1);
  check<32, 64>(s, 2);
  s.batch = 2;
  s.h = 37;
  s.w = 53;  // 10 x 14 out: partial tiles both ways
  check<16, 32>(s, 3);
  s.batch = 1;
  s.h = 130;
  s.w = 70;  // 33 x 18 out
  check<32, 64>(s, 4);
  s.h = 5;
  s.w = 6;  // smaller than a tile
  check<16, 32>(s, 5);
  s.batch = 3;
  s.h = 18;
  s.w = 130;
  s.ldx = 6;
  s.x_c0 = 2;  // an input slice
  check<16, 32>(s, 6);
}

TEST_CASE("conv2d_stem_pair_f16's shared memory fits two blocks per SM and its map rows fall in distinct banks",
          "[stem_pair][layout]") {
  // The patch rows as stem_patch.cuh needs them: whole chunks of 8 values covering a row, a raw row that holds a
  // row plus its misalignment (< 8 halves) in whole 16-byte granules.
  using A = sp::Geom<16, 32>;
  STATIC_REQUIRE(A::kRS % 8 == 0);
  STATIC_REQUIRE(A::kRS >= A::kPW * A::kCin);
  STATIC_REQUIRE(A::kChunks * 8 == A::kRS);
  STATIC_REQUIRE(A::kRawRS >= A::kPW * A::kCin + 7);
  STATIC_REQUIRE(A::kGranules * 8 == A::kRawRS);
  CHECK(sp::Geom<16, 32>::kBytes <= 227 * 1024 / 3);
  CHECK(sp::Geom<32, 64>::kBytes <= 227 * 1024 / 2);
  // The 8 rows x 4 column pairs of an A register (lanes 0..31) hit 32 distinct 4-byte banks; so do B's.
  const auto distinct = [](auto offset_of) {
    bool bank[32] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int b = (offset_of(lane) / 2) % 32;
      if (bank[b]) return false;
      bank[b] = true;
    }
    return true;
  };
  CHECK(distinct([](int lane) { return sp::a_offset<16, 32>(3, lane, 0, 1, 2, 0); }));
  CHECK(distinct([](int lane) { return sp::a_offset<32, 64>(3, lane, 1, 1, 2, 1); }));
  CHECK(distinct([](int lane) { return sp::b_offset<16, 32>(lane, 0, 1, 48); }));
  CHECK(distinct([](int lane) { return sp::b_offset<32, 64>(lane, 1, 2, 96); }));
}
