// src/backends/cuda/profile.cuh - timing a CUDA executor's network, for yolo12-bench (an internal
// interface: bench/bench.cpp is its one user).
//
// Both functions take an executor that has run() a batch of images at least once, so its input value
// holds a letterboxed image (the kernels' times do not depend on the values), and enqueue only its
// bound network ops (CudaExecutor::network()) on its stream, captured into CUDA graphs of their own:
//   time_network    the whole network as one graph (as the executor runs it: its streams, programmatic
//                   launches), replayed warmup + iters times, timed with events around each replay:
//                   the figure comparable with PyTorch's "forward only" numbers;
//   profile_network every op between two events inside one graph, replayed likewise; per op the median
//                   (serially, on one stream, without programmatic launches).
// The executor itself carries no benchmark code.
#pragma once

#include <string>
#include <vector>

#include "executor.cuh"

namespace yolo12::cuda {

// One network op of the per-op profile. New columns (roofline floors, ...) go here.
struct OpRecord {
  std::string label;     // Step::label
  double bytes = 0;      // activations read + written and weights read, whole batch (lower bound)
  double flops = 0;      // multiply-adds x 2, whole batch
  double median_ms = 0;  // between the CUDA events around the op
};

// Milliseconds of each timed replay (iters values).
std::vector<double> time_network(CudaExecutor& ex, int batch, int warmup, int iters);
// One record per network op, in execution order.
std::vector<OpRecord> profile_network(const CudaExecutor& ex, int batch, int warmup, int iters);

}  // namespace yolo12::cuda
