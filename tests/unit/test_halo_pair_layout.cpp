// tests/unit/test_halo_pair_layout.cpp - conv2d_halo_pair_f16's addressing (src/backends/cuda/halo_pair_layout.hpp)
// replayed on the CPU: the tile walk, the input tile as the kernel's copies fill it (zero outside the image, NaN in
// each pixel's padding halves), the K tables, step 1's A rows (each lane's row address plus the table's offset, as
// ldmatrix reads them) into the map tile with its zero border, step 2's A rows from the map, and the output pixels each
// warp stores. With small integer inputs and no SiLU every value is exact, so the result must equal a direct
// computation of the two convs (+ the residual) exactly. Also: every map pixel written once per tile, step 2 reading
// only map pixels this tile wrote, no read outside a tile, every output written exactly once, and the shared-memory
// layout's regions in order, 16-byte aligned and within the 227 KiB a block may have. Runs without a GPU;
// tests/gpu/test_halo_pair.cu runs the kernel itself on one.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/halo_pair_layout.hpp"
#include "catch.hpp"

namespace hp = yolo12::cuda::halo_pair;

namespace {

struct Case {
  int batch, h, w, c_in, c_mid, c_out;
  bool residual;
  int wr;
  std::string describe() const {
    return std::to_string(batch) + "x" + std::to_string(h) + "x" + std::to_string(w) + " " + std::to_string(c_in) +
           "->" + std::to_string(c_mid) + "->" + std::to_string(c_out) + (residual ? " +res" : "") + " wr " +
           std::to_string(wr);
  }
};

// x (B, H, W, c_in) -> (B, H, W, c_out), 3x3, stride 1, pad 1; w (c_out, c_in, 3, 3).
std::vector<double> conv3(const std::vector<double>& x, int batch, int h, int w, int c_in, const std::vector<double>& wt,
                          const std::vector<double>& bias, int c_out) {
  std::vector<double> y(static_cast<std::size_t>(batch) * h * w * c_out);
  for (int n = 0; n < batch; ++n)
    for (int oy = 0; oy < h; ++oy)
      for (int ox = 0; ox < w; ++ox)
        for (int co = 0; co < c_out; ++co) {
          double s = bias[co];
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = oy - 1 + ky, ix = ox - 1 + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              for (int ci = 0; ci < c_in; ++ci)
                s += x[((static_cast<std::size_t>(n) * h + iy) * w + ix) * c_in + ci] *
                     wt[((static_cast<std::size_t>(co) * c_in + ci) * 3 + ky) * 3 + kx];
            }
          y[((static_cast<std::size_t>(n) * h + oy) * w + ox) * c_out + co] = s;
        }
  return y;
}

// Weights packed as for every GEMM conv: row n, column tap * c_in + ci, zero past K and past the real rows.
std::vector<double> packed(const std::vector<double>& wt, int c_out, int c_in, int bn, int k16) {
  std::vector<double> b(static_cast<std::size_t>(bn) * k16, 0.0);
  for (int n = 0; n < c_out; ++n)
    for (int tap = 0; tap < 9; ++tap)
      for (int ci = 0; ci < c_in; ++ci) b[n * k16 + tap * c_in + ci] = wt[(n * c_in + ci) * 9 + tap];
  return b;
}

struct Counters {
  int bad_reads = 0;       // outside a tile, or of a map pixel this tile did not write
  int map_rewrites = 0;    // a map pixel written twice in one tile
  int out_rewrites = 0;    // an output written twice
};

void replay(const Case& c, std::mt19937& rng) {
  INFO(c.describe());
  std::uniform_int_distribution<int> small(-2, 2);
  const auto fill = [&](std::size_t n) {
    std::vector<double> v(n);
    for (double& e : v) e = small(rng);
    return v;
  };
  const std::vector<double> x = fill(static_cast<std::size_t>(c.batch) * c.h * c.w * c.c_in);
  const std::vector<double> w1 = fill(static_cast<std::size_t>(c.c_mid) * c.c_in * 9), b1 = fill(c.c_mid);
  const std::vector<double> w2 = fill(static_cast<std::size_t>(c.c_out) * c.c_mid * 9), b2 = fill(c.c_out);
  const std::vector<double> res = c.residual ? fill(static_cast<std::size_t>(c.batch) * c.h * c.w * c.c_out)
                                             : std::vector<double>();
  std::vector<double> want = conv3(conv3(x, c.batch, c.h, c.w, c.c_in, w1, b1, c.c_mid), c.batch, c.h, c.w, c.c_mid, w2,
                                   b2, c.c_out);
  for (std::size_t i = 0; i < res.size(); ++i) want[i] += res[i];

  const hp::Layout L = hp::layout(c.c_in, c.c_mid, c.c_out, c.wr);
  const std::vector<double> B1 = packed(w1, c.c_mid, c.c_in, L.bn1, L.k16_1);
  const std::vector<double> B2 = packed(w2, c.c_out, c.c_mid, L.bn2, L.k16_2);
  std::vector<int> tab1(L.k16_1 / 8), tab2(L.k16_2 / 8);
  for (int j = 0; j < L.k16_1 / 8; ++j) tab1[j] = hp::k_group_offset(j, L.c_in, L.k1, hp::kInW, L.in_row);
  for (int j = 0; j < L.k16_2 / 8; ++j) tab2[j] = hp::k_group_offset(j, L.c_mid, L.k2, hp::kMapW, L.map_row);

  std::vector<double> got(want.size(), NAN);
  std::vector<int> out_writes(want.size(), 0);
  Counters k;
  const int tiles = c.batch * hp::tiles_y(L, c.h) * hp::tiles_x(c.w);
  std::vector<bool> tile_seen(static_cast<std::size_t>(c.batch) * c.h * c.w, false);
  for (int t = 0; t < tiles; ++t) {
    const hp::Tile at = hp::tile_at(L, c.h, c.w, t);
    REQUIRE(at.n >= 0);
    REQUIRE(at.n < c.batch);
    // The input tile as load_input fills it: pixel pix at (oy0 - 2 + pix / kInW, ox0 - 2 + pix % kInW), its c_in
    // channels, zero outside the image; the padding halves of each pixel NaN (never to be read).
    std::vector<double> in(static_cast<std::size_t>(L.in_stage_halves), NAN);
    for (int pix = 0; pix < L.in_h * hp::kInW; ++pix) {
      const int iy = at.oy0 - 2 + pix / hp::kInW, ix = at.ox0 - 2 + pix % hp::kInW;
      const bool inside = iy >= 0 && iy < c.h && ix >= 0 && ix < c.w;
      for (int ci = 0; ci < c.c_in; ++ci)
        in[pix * L.in_row + ci] = inside ? x[((static_cast<std::size_t>(at.n) * c.h + iy) * c.w + ix) * c.c_in + ci] : 0.0;
    }
    // A[r][kk] of an m16 tile: row r's lane (r for columns 0-7 of the K step, r + 16 for 8-15) addresses
    // row_of(r) + table[ks / 8 + half]; the zero row where the table says -1.
    const auto a_value = [&](const std::vector<double>& tile, const std::vector<int>& tab, int row, int ks, int kk,
                             bool* ok) -> double {
      const int off = tab[static_cast<std::size_t>(ks / 8 + kk / 8)];
      if (off < 0) return 0.0;
      const long long addr = static_cast<long long>(row) + off + kk % 8;
      if (addr < 0 || addr >= static_cast<long long>(tile.size())) {
        *ok = false;
        return NAN;
      }
      return tile[static_cast<std::size_t>(addr)];
    };

    // Step 1: the map tile, NaN until written; written[q] counts.
    std::vector<double> map(static_cast<std::size_t>(L.map_pixels) * L.map_row, NAN);
    std::vector<int> written(static_cast<std::size_t>(L.map_pixels), 0);
    for (int warp = 0; warp < hp::kWarps; ++warp)
      for (int i = 0; i < hp::map_tiles_of_warp(L, warp); ++i) {
        const int mt = warp + i * hp::kWarps;
        REQUIRE(mt < L.map_mtiles);
        for (int r = 0; r < 16; ++r) {
          const int row = hp::map_pixel_input_row(L, hp::map_pixel(L, mt, r));
          double acc[32] = {};
          bool ok = true;
          for (int ks = 0; ks < L.k16_1; ks += 16)
            for (int kk = 0; kk < 16; ++kk) {
              const double av = a_value(in, tab1, row, ks, kk, &ok);
              for (int n = 0; n < L.bn1; ++n) acc[n] += av * B1[static_cast<std::size_t>(n) * L.k16_1 + ks + kk];
            }
          if (!ok) ++k.bad_reads;
          const int q = mt * 16 + r;  // the D row's pixel (the kernel's epilogue: lane / 4 + 8 h)
          if (q >= L.map_pixels) continue;
          const int gy = at.oy0 - 1 + q / hp::kMapW, gx = at.ox0 - 1 + q % hp::kMapW;
          const bool inside = gy >= 0 && gy < c.h && gx >= 0 && gx < c.w;
          if (written[q]++) ++k.map_rewrites;
          for (int n = 0; n < c.c_mid; ++n) map[q * L.map_row + n] = inside ? acc[n] + b1[n] : 0.0;
        }
      }
    for (int q = 0; q < L.map_pixels; ++q) CHECK(written[q] == 1);

    // Step 2: warp w, its rows; reads only map pixels written above (NaN elsewhere would show in the result).
    for (int warp = 0; warp < hp::kWarps; ++warp)
      for (int rr = 0; rr < L.wr; ++rr) {
        const int y = warp * L.wr + rr, oy = at.oy0 + y;
        if (oy >= c.h) break;
        for (int r = 0; r < 16; ++r) {
          const int row = hp::output_map_row(L, y, r);
          double acc[32] = {};
          bool ok = true;
          for (int ks = 0; ks < L.k16_2; ks += 16)
            for (int kk = 0; kk < 16; ++kk) {
              const double av = a_value(map, tab2, row, ks, kk, &ok);
              for (int n = 0; n < L.bn2; ++n) acc[n] += av * B2[static_cast<std::size_t>(n) * L.k16_2 + ks + kk];
            }
          if (!ok) ++k.bad_reads;
          const int ox = at.ox0 + r;
          if (ox >= c.w) continue;
          const std::size_t m = (static_cast<std::size_t>(at.n) * c.h + oy) * c.w + ox;
          tile_seen[m] = true;
          for (int n = 0; n < c.c_out; ++n) {
            const std::size_t o = m * c.c_out + n;
            if (out_writes[o]++) ++k.out_rewrites;
            got[o] = acc[n] + b2[n] + (c.residual ? res[o] : 0.0);
          }
        }
      }
  }
  CHECK(k.bad_reads == 0);
  CHECK(k.map_rewrites == 0);
  CHECK(k.out_rewrites == 0);
  int wrong = 0, unwritten = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    unwritten += out_writes[i] == 0;
    wrong += !(got[i] == want[i]);
  }
  CHECK(unwritten == 0);
  CHECK(wrong == 0);
  // Not a test that passes on zeros: the outputs vary.
  double spread = 0;
  for (std::size_t i = 1; i < want.size(); ++i) spread += std::fabs(want[i] - want[0]);
  CHECK(spread > 0);
}

}  // namespace

TEST_CASE("conv2d_halo_pair_f16's addressing replayed: both convs exact, each map pixel and output written once",
          "[halo_pair][layout]") {
  std::mt19937 rng(24);
  const std::vector<Case> cases = {
      {1, 16, 16, 16, 8, 16, true, 2},   // yolo12n's backbone bottleneck, one tile
      {2, 19, 37, 16, 8, 16, true, 1},   // partial tiles in both directions
      {1, 23, 33, 32, 16, 32, true, 2},  // yolo12n 80x80's, yolo12s 160x160's
      {1, 17, 20, 16, 16, 16, true, 1},  // the head's C3k bottlenecks
      {1, 9, 18, 32, 32, 32, false, 2},  // fewer rows than a tile; no residual
      {3, 8, 16, 8, 24, 8, true, 1},     // c_mid 24: the N tile (32) wider than the map
      {1, 5, 7, 24, 8, 32, false, 1},    // a map smaller than the tile
      {1, 1, 1, 8, 8, 8, true, 2},       // one pixel
  };
  for (const Case& c : cases) replay(c, rng);
}

TEST_CASE("conv2d_halo_pair_f16's shared-memory layout: regions in order, aligned, within a block's limit",
          "[halo_pair][layout]") {
  for (int wr : {1, 2})
    for (int c_in = 8; c_in <= hp::kMaxChannels; c_in += 8)
      for (int c_mid = 8; c_mid <= hp::kMaxChannels; c_mid += 8)
        for (int c_out = 8; c_out <= hp::kMaxChannels; c_out += 8) {
          const hp::Layout l = hp::layout(c_in, c_mid, c_out, wr);
          INFO(c_in << "->" << c_mid << "->" << c_out << " wr " << wr);
          CHECK(l.bn1 >= c_mid);
          CHECK(l.bn2 >= c_out);
          CHECK(l.map_row >= c_mid);
          CHECK(l.in_row >= c_in);
          CHECK((l.map_row / 8) % 2 == 1);  // odd 16-byte units per pixel: ldmatrix rows in distinct banks
          CHECK((l.in_row / 8) % 2 == 1);
          CHECK(l.b2_off >= l.bn1 * l.b1_row * 2);
          CHECK(l.tab1_off >= l.b2_off + l.bn2 * l.b2_row * 2);
          CHECK(l.tab2_off >= l.tab1_off + l.k16_1 / 8 * 4);
          CHECK(l.zero_off >= l.tab2_off + l.k16_2 / 8 * 4);
          CHECK(l.in_off == l.zero_off + 16);
          CHECK(l.map_off >= l.in_off + hp::kStages * l.in_stage_halves * 2);
          CHECK(l.c_off >= l.map_off + l.map_pixels * l.map_row * 2);
          for (int off : {l.b2_off, l.zero_off, l.in_off, l.map_off, l.c_off}) CHECK(off % 16 == 0);
          CHECK(l.b1_row % 8 == 0);  // 16-byte weight rows (cp.async, ldmatrix)
          CHECK(l.b2_row % 8 == 0);
          CHECK(l.bytes <= 232448);
        }
  // yolo12n's bottleneck at 160x160 on two rows per warp: small enough for several blocks per SM.
  CHECK(hp::layout(16, 8, 16, 2).bytes < 60 * 1024);
}
