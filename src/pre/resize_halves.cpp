// pre/resize_halves.cpp - the 2x2 rounded mean that INTER_LINEAR reduces to where every tap weighs 1024 / 1024
// (resize_halves.hpp). A plain loop per pixel and channel, and an SSSE3 loop for 1, 3 and 4 channels: the pixel pairs
// loaded (in one piece for a reduction by exactly 2, else gathered through the taps), byte shuffles put each output
// value's two bytes of a row side by side, pmaddubsw adds them into 16 bits, the two rows are added, rounded (+2, >> 2)
// and packed back to bytes. Both give the same bytes.
#include "pre/resize_halves.hpp"

#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define YOLO12_HALVES_SSSE3 1
#endif

namespace yolo12::pre {

HalfTaps half_taps(const std::vector<ResizeTap>& taps) {
  constexpr int kHalf = kResizeCoefScale / 2;
  bool adjacent = true;
  for (std::size_t d = 0; d < taps.size(); ++d) {
    const ResizeTap& t = taps[d];
    if (t.w0 != kHalf || t.w1 != kHalf || t.i1 != t.i0 + 1) return HalfTaps::No;
    adjacent = adjacent && t.i0 == static_cast<int>(2 * d);
  }
  return adjacent ? HalfTaps::Adjacent : HalfTaps::Any;
}

namespace {

inline std::uint8_t mean4(int a, int b, int c, int d) { return static_cast<std::uint8_t>((a + b + c + d + 2) >> 2); }

// Output pixels [x0, n) through the taps.
void halves_plain(std::uint8_t* dst, const std::uint8_t* r0, const std::uint8_t* r1, const ResizeTap* taps, int x0,
                  int n, int channels) {
  for (int x = x0; x < n; ++x) {
    const std::size_t o0 = static_cast<std::size_t>(taps[x].i0) * channels;
    const std::size_t o1 = static_cast<std::size_t>(taps[x].i1) * channels;
    for (int c = 0; c < channels; ++c)
      dst[static_cast<std::size_t>(x) * channels + c] = mean4(r0[o0 + c], r0[o1 + c], r1[o0 + c], r1[o1 + c]);
  }
}

#ifdef YOLO12_HALVES_SSSE3
bool cpu_has_ssse3() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("ssse3") != 0;
  }();
  return yes;
}

// A "unit" is 16 bytes of a row arranged so that each output value's two source bytes sit side by side, summed
// into 16 bits by pmaddubsw: 2 output pixels (6 values) with 3 channels, 2 pixels (8 values) with 4, 8 pixels with 1.
// kAdjacent (a reduction by exactly 2): one 16-byte load from the unit's first source pixel, shuffled. Else the
// pixels' pairs are gathered through the taps: 8-byte loads at each pair (3 and 4 channels: two per unit; the
// pair's 6 bytes and, with 3 channels, 2 bytes after them) or 2-byte ones (1 channel: eight per unit).
template <int kChannels, bool kAdjacent>
__attribute__((target("ssse3"), always_inline)) inline __m128i unit_sums(const std::uint8_t* row, const ResizeTap* taps,
                                                                         int x) {
  constexpr int kUnitPixels = kChannels == 1 ? 8 : 2;
  __m128i v;
  if (kAdjacent) {
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + static_cast<std::size_t>(2) * x * kChannels));
  } else if (kChannels == 1) {
    std::uint16_t pairs[kUnitPixels];
    for (int k = 0; k < kUnitPixels; ++k) std::memcpy(&pairs[k], row + taps[x + k].i0, 2);
    v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pairs));
  } else {
    const auto at = [&](int k) {
      return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + static_cast<std::size_t>(taps[x + k].i0) * kChannels));
    };
    v = _mm_unpacklo_epi64(at(0), at(1));
  }
  // With 3 channels an adjacent unit's second pixel pair starts at byte 6, a gathered one's at byte 8.
  const __m128i pair = kChannels == 3
                           ? (kAdjacent ? _mm_setr_epi8(0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, -1, -1, -1, -1)
                                        : _mm_setr_epi8(0, 3, 1, 4, 2, 5, 8, 11, 9, 12, 10, 13, -1, -1, -1, -1))
                       : kChannels == 4 ? _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)
                                        : _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm_maddubs_epi16(_mm_shuffle_epi8(v, pair), _mm_set1_epi8(1));
}

// Output pixels from 0 in steps of two units (2 * kUnitPixels pixels, 2 * kVals bytes stored with one 16-byte store)
// while every load and the store stay inside their rows; returns the first pixel not written.
template <int kChannels, bool kAdjacent>
__attribute__((target("ssse3"))) int halves_ssse3(std::uint8_t* dst, const std::uint8_t* r0, const std::uint8_t* r1,
                                                  const ResizeTap* taps, int n) {
  constexpr int kUnitPixels = kChannels == 1 ? 8 : 2;
  constexpr int kStep = 2 * kUnitPixels;
  // packus gives [unit 0's 8 values | unit 1's 8]; with 3 channels 6 of each are outputs.
  const __m128i pack = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1);
  const __m128i two = _mm_set1_epi16(2);
  // The source bytes a row surely has (through its last tap's second pixel), and the output row's bytes.
  const std::size_t in_bytes = (static_cast<std::size_t>(taps[n - 1].i1) + 1) * kChannels;
  const std::size_t out_bytes = static_cast<std::size_t>(n) * kChannels;
  int x = 0;
  for (; x + kStep <= n && static_cast<std::size_t>(x) * kChannels + 16 <= out_bytes; x += kStep) {
    // The step's last byte read: an adjacent unit loads 16 bytes at source pixel 2 * (x + kUnitPixels); a
    // gathered one 8 (or 2) at its last pixel pair.
    const std::size_t last = kAdjacent ? static_cast<std::size_t>(2) * (x + kUnitPixels) * kChannels + 16
                                       : static_cast<std::size_t>(taps[x + kStep - 1].i0) * kChannels +
                                             (kChannels == 1 ? 2 : 8);
    if (last > in_bytes) break;
    __m128i a = _mm_add_epi16(unit_sums<kChannels, kAdjacent>(r0, taps, x), unit_sums<kChannels, kAdjacent>(r1, taps, x));
    __m128i b = _mm_add_epi16(unit_sums<kChannels, kAdjacent>(r0, taps, x + kUnitPixels),
                              unit_sums<kChannels, kAdjacent>(r1, taps, x + kUnitPixels));
    a = _mm_srli_epi16(_mm_add_epi16(a, two), 2);
    b = _mm_srli_epi16(_mm_add_epi16(b, two), 2);
    __m128i out = _mm_packus_epi16(a, b);
    if (kChannels == 3) out = _mm_shuffle_epi8(out, pack);  // 12 bytes; the 4 after them are rewritten next step
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + static_cast<std::size_t>(x) * kChannels), out);
  }
  return x;
}
#endif

}  // namespace

void resize_halves_row(std::uint8_t* dst, const std::uint8_t* row0, const std::uint8_t* row1,
                       const std::vector<ResizeTap>& taps_x, int channels, bool adjacent) {
  const int n = static_cast<int>(taps_x.size());
  int x = 0;
#ifdef YOLO12_HALVES_SSSE3
  if (n > 0 && cpu_has_ssse3()) {
    const ResizeTap* t = taps_x.data();
    switch (channels) {
      case 3: x = adjacent ? halves_ssse3<3, true>(dst, row0, row1, t, n) : halves_ssse3<3, false>(dst, row0, row1, t, n); break;
      case 4: x = adjacent ? halves_ssse3<4, true>(dst, row0, row1, t, n) : halves_ssse3<4, false>(dst, row0, row1, t, n); break;
      case 1: x = adjacent ? halves_ssse3<1, true>(dst, row0, row1, t, n) : halves_ssse3<1, false>(dst, row0, row1, t, n); break;
      default: break;  // 2 channels: the plain loop
    }
  }
#else
  (void)adjacent;
#endif
  halves_plain(dst, row0, row1, taps_x.data(), x, n, channels);
}

}  // namespace yolo12::pre
