// bench/roofline.hpp - the two ceilings of a per-op profile, measured on the GPU it runs on, and each op's
// floor against them (issue 11, item 1).
//
//   const bench::Roofline roof = bench::measure_roofline(stream);          // about 0.2 s of GPU time
//   double floor = roof.floor_ms(op_bytes, op_flops);                       // max(bytes / bw, flops / peak)
//   bench::print_op_roofline(stdout, roof, "fp16 b32", ops, 40);            // the table, slowest gaps first
//
// Bandwidth: a device-to-device copy of copy_bytes (several times the L2), counting bytes read plus bytes
// written, through our 16-byte copy kernel and through cudaMemcpyAsync; the better of the two.
// fp16 tensor-core peak: loops of MMAs with no memory traffic (operands in registers or shared memory,
// fp32 accumulate): mma.sync m16n8k16 on any sm_80+ GPU, and wgmma m64n256k16 where the build has sm_90a
// code; the better of the two. Both with varied (not constant) operand bits, since the tensor cores draw
// less power, and clock higher, on constant data.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace yolo12::bench {

struct Roofline {
  double copy_kernel_gbs = 0;  // our copy kernel: (bytes read + bytes written) / s / 1e9
  double memcpy_gbs = 0;       // cudaMemcpyAsync device to device, counted the same way
  double mma_sync_tflops = 0;  // mma.sync m16n8k16 f16 -> f32 loop
  double wgmma_tflops = 0;     // wgmma m64n256k16 f16 -> f32 loop; 0 where not built (no sm_90a) or skipped
  std::size_t copy_bytes = 0;  // the size of the copy measured

  double bandwidth_gbs() const { return copy_kernel_gbs > memcpy_gbs ? copy_kernel_gbs : memcpy_gbs; }
  double fp16_tflops() const { return mma_sync_tflops > wgmma_tflops ? mma_sync_tflops : wgmma_tflops; }
  // An op's floor in ms: the larger of its bytes at the bandwidth and its FLOPs at the fp16 peak.
  double floor_ms(double bytes, double flops) const;
  // "bytes" or "flops": which of the two sets the floor.
  const char* bound(double bytes, double flops) const;
};

struct RooflineOptions {
  std::size_t copy_bytes = std::size_t(1) << 30;  // per buffer (source and destination); halved until it fits
  int copy_reps = 10;                             // timed copies per method (median)
  int mma_iters = 20000;                          // loop trips per warp (mma.sync) / warpgroup (wgmma)
  bool wgmma = true;                              // run the wgmma loop where the build has it
};

// Measures the ceilings on the current device (throws yolo12::CudaError on a CUDA failure).
Roofline measure_roofline(cudaStream_t stream, const RooflineOptions& options = {});

// One profiled op: what the per-op profile reports for it.
struct OpCost {
  std::string label;
  double bytes = 0;  // activations read and written plus weights, each once
  double flops = 0;
  double ms = 0;     // median time
};

// The ceilings, then the network's sums (time, floors, multiple) and the `top` ops with the largest gap
// (time - floor): time, floor, which ceiling sets it, time / floor.
void print_op_roofline(std::FILE* out, const Roofline& roof, const std::string& title, const std::vector<OpCost>& ops,
                       int top);
std::string describe(const Roofline& roof);

// The loops' raw checks, for the tests: each thread's sum of accumulators after `iters` trips on all-ones
// operands (mma.sync: 32 accumulators of 16 * iters each; wgmma: 128 of 64 * iters), one value per thread of
// `blocks` blocks (mma.sync: 256 threads, wgmma: 256), and the copy kernel on n 16-byte vectors.
std::vector<float> mma_sync_ones(int blocks, int iters);
std::vector<float> wgmma_ones(int blocks, int iters);  // empty where the build has no sm_90a wgmma
void copy_vectors(const void* src, void* dst, std::size_t n16, cudaStream_t stream);

}  // namespace yolo12::bench
