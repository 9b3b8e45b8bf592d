// tools/dev/model_load_time.cpp - how long ModelFile::open takes (docs/hardening.md, "Load time").
//
//   model_load_time MODEL.y12 [RUNS]
// Prints the median of RUNS (default 9) for: open() alone; open() and every tensor read as float32
// (what the CPU backend does at construction); both again with the file dropped from the page
// cache before each run (posix_fadvise DONTNEED: a cold read from disk). Built against the
// library's internal headers by hand (the command is in docs/hardening.md), so that the same source
// measures an older loader too.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "model/model_file.hpp"
#if __has_include("model/checksum.hpp")
#include <fstream>
#include <iterator>

#include "model/checksum.hpp"
#define HAVE_CHECKSUM 1
#endif

namespace {

void drop_cache(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double median_ms(const char* path, int runs, bool cold, bool read_tensors) {
  std::vector<double> ms;
  double sink = 0;
  for (int i = 0; i < runs; ++i) {
    if (cold) drop_cache(path);
    const auto t0 = std::chrono::steady_clock::now();
    auto mf = yolo12::model::ModelFile::open(path);
    if (read_tensors)
      for (const auto& t : mf->tensors()) sink += mf->tensor_f32(t.name)[0];
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  if (sink == 12345.678) std::puts("");
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: model_load_time MODEL.y12 [RUNS]\n");
    return 2;
  }
  const int runs = argc > 2 ? std::stoi(argv[2]) : 9;
  try {
    std::printf("%s, median of %d\n", argv[1], runs);
    std::printf("warm  open:             %8.1f ms\n", median_ms(argv[1], runs, false, false));
    std::printf("warm  open + f32 copy:  %8.1f ms\n", median_ms(argv[1], runs, false, true));
    std::printf("cold  open:             %8.1f ms\n", median_ms(argv[1], runs, true, false));
    std::printf("cold  open + f32 copy:  %8.1f ms\n", median_ms(argv[1], runs, true, true));
#ifdef HAVE_CHECKSUM
    // The checksum alone over the file's bytes (a v2 file's covered bytes are all but 16).
    std::ifstream in(argv[1], std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (unsigned threads : {1u, 0u}) {
      std::vector<double> ms;
      for (int i = 0; i < runs; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        volatile auto sum = yolo12::model::tree_checksum(reinterpret_cast<const unsigned char*>(bytes.data()),
                                                         bytes.size(), threads);
        (void)sum;
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      std::printf("checksum alone, %s:  %6.1f ms (%.2f GB/s)\n", threads == 1 ? "1 thread " : "auto     ",
                  ms[ms.size() / 2], bytes.size() / ms[ms.size() / 2] / 1e6);
    }
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
