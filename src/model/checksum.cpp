// model/checksum.cpp - see checksum.hpp.
#include "model/checksum.hpp"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace yolo12::model {
namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr std::uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr std::uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr std::uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr std::uint64_t kP5 = 0x27D4EB2F165667C5ull;

inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian reads on any host: one unaligned load, swapped on a big-endian one.
inline std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}
inline std::uint64_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

// One lane step: the accumulator absorbs 8 input bytes.
inline std::uint64_t round_step(std::uint64_t acc, std::uint64_t lane) {
  acc += lane * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}
inline std::uint64_t merge_lane(std::uint64_t acc, std::uint64_t lane) {
  acc ^= round_step(0, lane);
  return acc * kP1 + kP4;
}

}  // namespace

std::uint64_t xxh64(const void* data, std::size_t size, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  std::uint64_t acc;
  if (size >= 32) {
    // Four lanes over 32-byte stripes.
    std::uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* const last_stripe = end - 32;
    do {
      v1 = round_step(v1, load64(p));
      v2 = round_step(v2, load64(p + 8));
      v3 = round_step(v3, load64(p + 16));
      v4 = round_step(v4, load64(p + 24));
      p += 32;
    } while (p <= last_stripe);
    acc = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    acc = merge_lane(acc, v1);
    acc = merge_lane(acc, v2);
    acc = merge_lane(acc, v3);
    acc = merge_lane(acc, v4);
  } else {
    acc = seed + kP5;
  }
  acc += static_cast<std::uint64_t>(size);
  // The tail: 8 bytes, then 4, then single bytes.
  for (; end - p >= 8; p += 8) acc = rotl(acc ^ round_step(0, load64(p)), 27) * kP1 + kP4;
  if (end - p >= 4) {
    acc = rotl(acc ^ (load32(p) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) acc = rotl(acc ^ (*p * kP5), 11) * kP1;
  // Avalanche.
  acc ^= acc >> 33;
  acc *= kP2;
  acc ^= acc >> 29;
  acc *= kP3;
  acc ^= acc >> 32;
  return acc;
}

std::uint64_t tree_checksum(const unsigned char* bytes, std::size_t size, unsigned threads) {
  const std::size_t chunks = std::max<std::size_t>(1, (size + kChecksumChunk - 1) / kChecksumChunk);
  std::vector<unsigned char> digests(8 * chunks);  // (chunks, 8) little-endian
  auto hash_range = [&](std::size_t c0, std::size_t c1) {
    for (std::size_t c = c0; c < c1; ++c) {
      const std::size_t begin = c * kChecksumChunk;
      const std::size_t n = std::min(kChecksumChunk, size - std::min(size, begin));
      const std::uint64_t d = xxh64(bytes + std::min(size, begin), n, 0);
      for (int i = 0; i < 8; ++i) digests[8 * c + i] = static_cast<unsigned char>(d >> (8 * i));
    }
  };
  if (threads == 0) {
    // About 16 MiB per thread is where a thread pays for itself; at most the hardware's threads.
    const std::size_t by_size = size / (16u << 20) + 1;
    threads = static_cast<unsigned>(std::min<std::size_t>(by_size, std::max(1u, std::thread::hardware_concurrency())));
  }
  threads = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, threads), chunks));
  // Range t is [t * per, (t + 1) * per): ranges 1.. on their own threads, range 0 on this one. A
  // thread that cannot be started leaves its range to this thread (never std::terminate).
  const std::size_t per = (chunks + threads - 1) / threads;
  std::vector<std::thread> pool;
  std::vector<std::size_t> inline_ranges = {0};
  for (unsigned t = 1; t < threads; ++t) {
    const std::size_t c0 = t * per, c1 = std::min(chunks, c0 + per);
    if (c0 >= c1) break;
    try {
      pool.emplace_back(hash_range, c0, c1);
    } catch (const std::system_error&) {
      inline_ranges.push_back(t);
    }
  }
  for (std::size_t t : inline_ranges) hash_range(t * per, std::min(chunks, (t + 1) * per));
  for (std::thread& th : pool) th.join();
  return xxh64(digests.data(), digests.size(), static_cast<std::uint64_t>(size));
}

}  // namespace yolo12::model
