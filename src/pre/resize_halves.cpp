// pre/resize_halves.cpp - the 2x2 rounded mean that INTER_LINEAR reduces to where every tap weighs 1024 / 1024
// (resize_halves.hpp). A plain loop per pixel and channel, and for a reduction by exactly 2 an SSSE3 loop: byte
// shuffles put each output value's two pixels of a row side by side, pmaddubsw adds them into 16 bits, the two
// rows are added, rounded (+2, >> 2) and packed back to bytes. Both give the same bytes.
#include "pre/resize_halves.hpp"

#include <cstddef>

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
    if (t.w0 != kHalf || t.w1 != kHalf) return HalfTaps::No;
    adjacent = adjacent && t.i0 == static_cast<int>(2 * d) && t.i1 == t.i0 + 1;
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

// One 16-byte load of a row, its bytes shuffled by `pair`, adjacent bytes summed into 16 bits.
__attribute__((target("ssse3"), always_inline)) inline __m128i pair_sums(const std::uint8_t* p, __m128i pair) {
  return _mm_maddubs_epi16(_mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), pair),
                           _mm_set1_epi8(1));
}

// A "unit" is one 16-byte load of a row, shuffled so that each output value's two source bytes sit side by side:
// kChannels 3 uses 12 of the bytes (4 pixels -> 2 outputs, 6 values), 1 and 4 all 16 (8 values). A step is two
// units (2 * kIn source bytes of each row) and stores 2 * kVals bytes. Returns the first pixel it did not write.
template <int kChannels>
__attribute__((target("ssse3"))) int halves_ssse3(std::uint8_t* dst, const std::uint8_t* r0, const std::uint8_t* r1,
                                                  int n) {
  constexpr int kIn = kChannels == 3 ? 12 : 16;  // source bytes a unit consumes
  constexpr int kVals = kIn / 2;                 // output bytes a unit makes
  constexpr int kPixels = 2 * kVals / kChannels;  // output pixels a step makes
  const __m128i pair = kChannels == 3   ? _mm_setr_epi8(0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, -1, -1, -1, -1)
                       : kChannels == 4 ? _mm_setr_epi8(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15)
                                        : _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  // packus gives [unit 0's 8 values | unit 1's 8]; with 3 channels 6 of each are outputs.
  const __m128i pack = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, -1, -1, -1, -1);
  const __m128i two = _mm_set1_epi16(2);
  const std::size_t in_bytes = static_cast<std::size_t>(2) * n * kChannels;  // the source bytes the row reads
  const std::size_t out_bytes = static_cast<std::size_t>(n) * kChannels;
  int x = 0;
  // The last unit loads 16 bytes from kIn on, and the store writes 16 bytes: neither may pass its row.
  for (; static_cast<std::size_t>(2) * x * kChannels + kIn + 16 <= in_bytes &&
         static_cast<std::size_t>(x) * kChannels + 16 <= out_bytes;
       x += kPixels) {
    const std::uint8_t* p0 = r0 + static_cast<std::size_t>(2) * x * kChannels;
    const std::uint8_t* p1 = r1 + static_cast<std::size_t>(2) * x * kChannels;
    __m128i a = _mm_add_epi16(pair_sums(p0, pair), pair_sums(p1, pair));
    __m128i b = _mm_add_epi16(pair_sums(p0 + kIn, pair), pair_sums(p1 + kIn, pair));
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
  if (adjacent && cpu_has_ssse3()) {
    if (channels == 3) x = halves_ssse3<3>(dst, row0, row1, n);
    else if (channels == 4) x = halves_ssse3<4>(dst, row0, row1, n);
    else if (channels == 1) x = halves_ssse3<1>(dst, row0, row1, n);
  }
#else
  (void)adjacent;
#endif
  halves_plain(dst, row0, row1, taps_x.data(), x, n, channels);
}

}  // namespace yolo12::pre
