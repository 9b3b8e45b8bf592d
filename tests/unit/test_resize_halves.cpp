// tests/unit/test_resize_halves.cpp - pre::resize_halves_row (src/pre/resize_halves.hpp), the 2x2 rounded mean the
// CUDA staging packs for frames reduced by an even factor, against pre::resize_bilinear_u8 (the OpenCV-exact
// resize) byte for byte: reductions by 2 (pixels loaded in one piece and gathered, every width from 1 to 80 so each
// tail length runs), 4 and 6 (gathered), 1 to 4 channels (2: the plain loop), padded rows, extreme and random
// pixels, nothing written past the row; and the taps' classification.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "pre/letterbox.hpp"
#include "pre/resize_halves.hpp"

namespace pre = yolo12::pre;

namespace {

// Resizes src_w x src_h (channels, rows of `pitch` bytes) to dst_w x dst_h both ways; requires the same bytes, and
// that the rows' function wrote nothing past its row.
void check_same_as_bilinear(int src_w, int src_h, int dst_w, int dst_h, int channels, int pad, std::mt19937& rng,
                            bool extremes) {
  const std::size_t pitch = static_cast<std::size_t>(src_w) * channels + pad;
  std::vector<std::uint8_t> src(pitch * src_h);
  std::uniform_int_distribution<int> byte(0, 255), coin(0, 1);
  for (auto& v : src) v = static_cast<std::uint8_t>(extremes ? 255 * coin(rng) : byte(rng));
  const std::size_t row = static_cast<std::size_t>(dst_w) * channels;
  std::vector<std::uint8_t> want(row * dst_h);
  pre::resize_bilinear_u8(src.data(), src_w, src_h, pitch, channels, want.data(), dst_w, dst_h);

  const auto tx = pre::resize_taps_x(src_w, dst_w);
  const auto ty = pre::resize_taps_y(src_h, dst_h);
  REQUIRE(pre::half_taps(tx) != pre::HalfTaps::No);
  REQUIRE(pre::half_taps(ty) != pre::HalfTaps::No);
  const bool adjacent = pre::half_taps(tx) == pre::HalfTaps::Adjacent;
  constexpr std::uint8_t kGuard = 0xA5;
  // Adjacent taps both ways: their pixels loaded in one piece, and gathered through the taps as other reductions.
  for (const bool fast : {adjacent, false}) {
    std::vector<std::uint8_t> got(row * dst_h + 64, kGuard);
    for (int y = 0; y < dst_h; ++y)
      pre::resize_halves_row(got.data() + row * y, src.data() + pitch * ty[y].i0, src.data() + pitch * ty[y].i1, tx,
                             channels, fast);
    INFO(src_w << "x" << src_h << " -> " << dst_w << "x" << dst_h << ", " << channels << " channels, pad " << pad
               << (fast ? ", in one piece" : ", gathered") << (extremes ? ", 0 / 255 pixels" : ""));
    std::size_t differ = 0;
    for (std::size_t i = 0; i < want.size(); ++i) differ += got[i] != want[i] ? 1 : 0;
    REQUIRE(differ == 0);
    for (std::size_t i = want.size(); i < got.size(); ++i) REQUIRE(got[i] == kGuard);
  }
}

}  // namespace

TEST_CASE("half_taps finds the reductions by an even factor", "[pre][halves]") {
  CHECK(pre::half_taps(pre::resize_taps_x(1280, 640)) == pre::HalfTaps::Adjacent);
  CHECK(pre::half_taps(pre::resize_taps_y(720, 360)) == pre::HalfTaps::Adjacent);
  CHECK(pre::half_taps(pre::resize_taps_x(2560, 640)) == pre::HalfTaps::Any);  // lines 4d + 1 and 4d + 2
  CHECK(pre::half_taps(pre::resize_taps_x(3840, 640)) == pre::HalfTaps::Any);  // lines 6d + 2 and 6d + 3
  CHECK(pre::half_taps(pre::resize_taps_x(2, 1)) == pre::HalfTaps::Adjacent);
  CHECK(pre::half_taps(pre::resize_taps_x(1920, 640)) == pre::HalfTaps::No);  // by 3: one line, weight 2048
  CHECK(pre::half_taps(pre::resize_taps_x(1281, 640)) == pre::HalfTaps::No);
  CHECK(pre::half_taps(pre::resize_taps_x(640, 640)) == pre::HalfTaps::No);
  CHECK(pre::half_taps(pre::resize_taps_x(320, 640)) == pre::HalfTaps::No);
}

TEST_CASE("resize_halves_row gives resize_bilinear_u8's bytes at every width, by 2, 4 and 6", "[pre][halves]") {
  std::mt19937 rng(2026);
  for (int channels = 1; channels <= 4; ++channels)
    for (int dst_w = 1; dst_w <= 80; ++dst_w) check_same_as_bilinear(2 * dst_w, 6, dst_w, 3, channels, 0, rng, false);
  for (int channels : {1, 3, 4})
    for (int pad : {0, 1, 5, 64}) {
      check_same_as_bilinear(1280, 16, 640, 8, channels, pad, rng, false);
      check_same_as_bilinear(1280, 16, 640, 8, channels, pad, rng, true);
      check_same_as_bilinear(4 * 37, 4 * 5, 37, 5, channels, pad, rng, false);
      check_same_as_bilinear(6 * 23, 6 * 4, 23, 4, channels, pad, rng, true);
      check_same_as_bilinear(2560, 16, 640, 4, channels, pad, rng, false);
      check_same_as_bilinear(3840, 12, 640, 2, channels, pad, rng, false);
    }
}
