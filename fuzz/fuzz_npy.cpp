// fuzz/fuzz_npy.cpp - libFuzzer target: the CLI's .npy reader (cli/npy.cpp, --input-tensor).
//
// read_npy_f32 takes a path, so the input is written to an in-memory file (memfd) and read back
// through /proc/self/fd. Anything but a clean yolo12::InputError is a finding; a header claiming a
// huge shape must be refused before the reader allocates (run with -rss_limit_mb).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "npy.hpp"
#include "yolo12/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("fuzz_npy", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const yolo12_cli::NpyArray a = yolo12_cli::read_npy_f32(path);
    std::size_t n = 1;
    for (std::size_t d : a.shape) n *= d;
    if (n != a.data.size()) __builtin_trap();  // the reader's own promise
  } catch (const yolo12::Error&) {
  }
  return 0;
}
