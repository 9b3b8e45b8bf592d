// tests/test_main.cpp - the one main() of every test executable.
// Executables built with YOLO12_TEST_NEEDS_GPU exit with 77 (CTest: skipped) when no CUDA device
// is visible, after saying so, unless the first argument is --host-only: then they run what the rest of the
// command line selects (CTest's <test>_host entries select the [host] cases, which need no device: the kernel
// selection rules, layouts and host-side packing), device or not. GPU test executables write their output
// unbuffered, so that a process that dies (a kernel trap under compute-sanitizer, an abort) still leaves every line
// it printed in the log.
#include <cstdio>
#include <cstring>

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#ifdef YOLO12_TEST_NEEDS_GPU
#include <cuda_runtime_api.h>
#endif

int main(int argc, char** argv) {
#ifdef YOLO12_TEST_NEEDS_GPU
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc > 1 && std::strcmp(argv[1], "--host-only") == 0) {
    argv[1] = argv[0];  // Catch sees the rest of the command line
    return Catch::Session().run(argc - 1, argv + 1);
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIPPED: no CUDA device visible; GPU tests run on the GPU machine (tools/gpu_check.sh)\n");
    return 77;
  }
#endif
  return Catch::Session().run(argc, argv);
}
