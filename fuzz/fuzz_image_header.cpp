// fuzz/fuzz_image_header.cpp - libFuzzer target: the CLI's image header reader
// (cli/image_header.cpp: JPEG SOFn, PNG IHDR, BMP, WebP, TIFF sizes read before decoding), on the
// bytes in memory and through the ReadAt callback the CLI uses on files. Built where that file
// exists (it comes with the CLI's hardening). Anything but a return is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<unsigned char> bytes(data, data + size);
  const yolo12_cli::ImageHeader a = yolo12_cli::read_image_header(bytes);
  const yolo12_cli::ImageHeader b = yolo12_cli::read_image_header([&](std::uint64_t offset, std::size_t n) {
    if (offset >= size) return std::vector<unsigned char>();
    const std::size_t end = static_cast<std::size_t>(std::min<std::uint64_t>(size, offset + n));
    return std::vector<unsigned char>(bytes.begin() + static_cast<std::ptrdiff_t>(offset), bytes.begin() + end);
  });
  // Both ways of reading must agree.
  if (a.format != b.format || a.width != b.width || a.height != b.height) __builtin_trap();
  return 0;
}
