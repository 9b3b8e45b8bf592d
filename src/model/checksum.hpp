// model/checksum.hpp - XXH64 and the .y12 format-2 checksum (docs/model-format.md, "Integrity").
//
// xxh64() is the standard 64-bit xxHash, written here from the algorithm's public description
// (tests/unit/test_model_file.cpp checks it against published vectors). tree_checksum() is what a
// version-2 file stores in its trailer: the covered bytes are cut into 64 KiB chunks, each chunk is
// hashed with seed 0, and the 8-byte little-endian digests, in order, are hashed again with the
// number of covered bytes as the seed. Chunks are independent, so they are hashed on several threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace yolo12::model {

constexpr std::size_t kChecksumChunk = 65536;

std::uint64_t xxh64(const void* data, std::size_t size, std::uint64_t seed);

// The format-2 checksum of bytes [0, size). threads: 0 = pick from the size and the hardware.
std::uint64_t tree_checksum(const unsigned char* bytes, std::size_t size, unsigned threads = 0);

}  // namespace yolo12::model
