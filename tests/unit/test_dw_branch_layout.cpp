// tests/unit/test_dw_branch_layout.cpp - conv2d_dw_branch_f16's layout (src/backends/cuda/dw_branch_layout.hpp) on
// the CPU: the shared-memory regions in order, 16-byte aligned, each map inside the region the kernel gives it, rows an
// odd number of 16-byte units; that the channel counts it takes fit the 227 KiB a block may have (yolo12n's P3 small
// enough for two blocks per SM); the tile walk covering every output pixel once; and the taps of both depthwise steps inside the tile
// they read. Runs without a GPU; tests/gpu/test_dw_branch.cu runs the kernel itself on one.
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/dw_branch_layout.hpp"
#include "catch.hpp"

namespace db = yolo12::cuda::dw_branch;

namespace {

constexpr int kBlockSmem = 232448;  // 227 KiB: what one block may opt in to on sm_90

void check_layout(int c0, int c1, int c2, int c3) {
  INFO(c0 << "->" << c1 << "->" << c2 << "->" << c3);
  const db::Layout l = db::layout(c0, c1, c2, c3);
  CHECK(l.c3p % 16 == 0);
  CHECK(l.c3p >= c3);
  CHECK(l.c3p < c3 + 16);
  for (int r : {l.r0, l.r1, l.r2, l.r3}) CHECK((r / 8) % 2 == 1);  // odd 16-byte units per row
  CHECK(l.r0 >= c0);
  CHECK(l.r1 >= c1);
  CHECK(l.r2 >= c2);
  CHECK(l.r3 >= l.c3p);
  // Regions in order, each 16-byte aligned, each holding what is put there.
  const std::vector<int> offs = {l.w1_off, l.w2_off, l.w3_off, l.dw1_off, l.dw2_off, l.bias_off, l.a_off, l.d_off,
                                 l.bytes};
  for (std::size_t i = 0; i < offs.size(); ++i) {
    CHECK(offs[i] % 16 == 0);
    if (i) CHECK(offs[i] > offs[i - 1]);
  }
  CHECK(l.w2_off - l.w1_off >= c1 * l.r0 * 2);
  CHECK(l.w3_off - l.w2_off >= c2 * l.r1 * 2);
  CHECK(l.dw1_off - l.w3_off >= l.c3p * l.r2 * 2);
  CHECK(l.dw2_off - l.dw1_off >= 9 * c0 * 2);
  CHECK(l.bias_off - l.dw2_off >= 9 * c1 * 2);
  CHECK(l.a_off - l.bias_off >= (c0 + 2 * c1 + c2 + l.c3p) * 4);
  CHECK(db::bias_at(l, 4) + l.c3p == c0 + 2 * c1 + c2 + l.c3p);
  // Region A: In, then P1, then P2; region D: D1 (192 A rows), then D2, then the staged output.
  CHECK(l.a_halves >= db::kInH * db::kInW * l.r0);
  CHECK(l.a_halves >= db::kMapPixels * l.r1);
  CHECK(l.a_halves >= db::kOutPixels * l.r2);
  CHECK(l.d_off - l.a_off >= l.a_halves * 2);
  CHECK(l.d_halves >= db::kMapRows * l.r0);
  CHECK(l.d_halves >= db::kOutPixels * l.r1);
  CHECK(l.d_halves >= db::kOutPixels * l.r3);
  CHECK(l.bytes - l.d_off >= l.d_halves * 2);
}

}  // namespace

TEST_CASE("dw_branch layout: regions in order, aligned, large enough; what fits a block", "[dw_branch][layout]") {
  const std::vector<int> mids = {16, 32, 48, 64, 80, 96, 112, 128};
  for (int c0 : mids)
    for (int c1 : mids)
      for (int c3 : {1, 7, 8, 13, 16, 20, 80, 100, 128}) check_layout(c0, c1, c1, c3);
  check_layout(64, 80, 96, 80);
  // yolo12n's P3 (64 in) and P4 (128), yolo12s's P3 (128 -> 128): within a block's shared memory; yolo12n's P3 small
  // enough for two blocks per SM (228 KiB each, 1 KiB reserved per block).
  CHECK(db::layout(64, 80, 80, 80).bytes <= (233472 / 2 - 1024));
  CHECK(db::layout(128, 80, 80, 80).bytes <= kBlockSmem);
  CHECK(db::layout(128, 128, 128, 80).bytes <= kBlockSmem);
  CHECK(db::layout(128, 128, 128, 128).bytes <= kBlockSmem);  // the largest channels_ok takes fits too
  CHECK(db::channels_ok(64, 80, 80, 80));
  CHECK_FALSE(db::channels_ok(256, 80, 80, 80));
  CHECK_FALSE(db::channels_ok(72, 80, 80, 80));
  CHECK_FALSE(db::channels_ok(64, 80, 80, 0));
  CHECK_FALSE(db::channels_ok(64, 80, 80, 129));
}

TEST_CASE("dw_branch tiles: every output pixel once; the depthwise taps inside the tiles they read",
          "[dw_branch][layout]") {
  for (const auto& [batch, h, w] : std::vector<std::tuple<int, int, int>>{{1, 80, 80}, {2, 37, 53}, {3, 5, 7},
                                                                         {1, 1, 1}, {1, 8, 16}, {2, 9, 17}}) {
    INFO(batch << "x" << h << "x" << w);
    const int tiles = static_cast<int>(db::tile_count(batch, h, w));
    std::vector<int> seen(static_cast<std::size_t>(batch) * h * w, 0);
    for (int t = 0; t < tiles; ++t) {
      const db::Tile at = db::tile_at(h, w, t);
      REQUIRE(at.n < batch);
      for (int p = 0; p < db::kOutPixels; ++p) {
        const int oy = at.oy0 + p / db::kTW, ox = at.ox0 + p % db::kTW;
        if (oy < h && ox < w) ++seen[(static_cast<std::size_t>(at.n) * h + oy) * w + ox];
      }
    }
    for (int s : seen) REQUIRE(s == 1);
  }
  // Step 1: map pixel q (rows past 180 repeat 179) reads In pixels (q / 18 + ky, q % 18 + kx), inside 12 x 20.
  for (int q = 0; q < db::kMapRows; ++q) {
    const int qq = q < db::kMapPixels ? q : db::kMapPixels - 1;
    CHECK(qq / db::kMapW + 2 < db::kInH);
    CHECK(qq % db::kMapW + 2 < db::kInW);
  }
  // Step 3: output pixel p reads P1 pixels (p / 16 + ky, p % 16 + kx), inside 10 x 18, and each of the 180 is read.
  std::set<int> read;
  for (int p = 0; p < db::kOutPixels; ++p)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const int y = p / db::kTW + ky, x = p % db::kTW + kx;
        CHECK(y < db::kMapH);
        CHECK(x < db::kMapW);
        read.insert(y * db::kMapW + x);
      }
  CHECK(static_cast<int>(read.size()) == db::kMapPixels);
}

TEST_CASE("dw_branch depthwise walk: every (m16 tile, chunk) once; a split last round, one tile a warp",
          "[dw_branch][layout]") {
  for (const int tile_pairs : {db::kMapRows / db::kDwRows, db::kOutPixels / db::kDwRows})
    for (int cchunks = 1; cchunks <= db::kMaxChannels / 16; ++cchunks) {
      INFO(tile_pairs << " tile pairs x " << cchunks << " chunks");
      const int units = tile_pairs * cchunks;
      const db::DwWalk walk = db::dw_walk(units);
      CHECK(walk.single_tiles <= db::kWarps);
      CHECK(walk.single_tiles % db::kDwTiles == 0);
      CHECK(walk.pair_units * db::kDwTiles + walk.single_tiles == units * db::kDwTiles);
      // Replay the kernel's dw_units: warp w takes pair units w, w + kWarps, ... below pair_units (dw_pair), then
      // single tile w (dw_single).
      std::vector<int> seen(static_cast<std::size_t>(units) * db::kDwTiles, 0);  // (tile, chunk)
      std::vector<int> tiles_of_warp(db::kWarps, 0);
      const auto take = [&](int warp, int tile, int chunk) {
        REQUIRE((tile >= 0 && tile < tile_pairs * db::kDwTiles && chunk >= 0 && chunk < cchunks));
        ++seen[static_cast<std::size_t>(tile) * cchunks + chunk];
        ++tiles_of_warp[warp];
      };
      for (int w = 0; w < db::kWarps; ++w) {
        for (int u = w; u < walk.pair_units; u += db::kWarps) {
          const db::DwUnit d = db::dw_pair(u, cchunks);
          for (int i = 0; i < db::kDwTiles; ++i) take(w, d.tile + i, d.chunk);
        }
        if (w < walk.single_tiles) {
          const db::DwUnit d = db::dw_single(walk, w, cchunks);
          take(w, d.tile, d.chunk);
        }
      }
      for (int s : seen) REQUIRE(s == 1);
      // No warp takes more tiles than pairs dealt round-robin would give it, and a split round leaves no warp idle
      // while another runs a pair.
      const int rounds = (units + db::kWarps - 1) / db::kWarps;
      int most = 0, least = 1 << 30;
      for (int t : tiles_of_warp) {
        most = t > most ? t : most;
        least = t < least ? t : least;
      }
      CHECK(most <= rounds * db::kDwTiles);
      if (walk.single_tiles > 0) CHECK(most - least <= 1);
    }
}
