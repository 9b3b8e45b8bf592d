// src/backends/cuda/profile.cu - see profile.cuh.
#include "profile.cuh"

#include <algorithm>
#include <cstddef>

#include "common.cuh"
#include "launch.cuh"

namespace yolo12::cuda {

namespace {

// CUDA objects made by one profiling run, released on every way out.
struct Timed {
  std::vector<cudaEvent_t> events;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  explicit Timed(std::size_t n_events) : events(n_events, nullptr) {
    for (cudaEvent_t& e : events) YOLO12_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~Timed() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (cudaEvent_t e : events)
      if (e) cudaEventDestroy(e);
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;
};

void check_batch(const CudaExecutor& ex, int batch, int iters) {
  if (batch < 1 || batch > ex.max_batch() || iters < 1)
    throw InputError("profile: batch " + std::to_string(batch) + " outside 1.." + std::to_string(ex.max_batch()) +
                     " or no iterations");
}

}  // namespace

std::vector<double> time_network(CudaExecutor& ex, int batch, int warmup, int iters) {
  check_batch(ex, batch, iters);
  cudaStream_t stream = ex.stream();
  ex.tune(batch);  // where tuning is on, before the capture (a no-op once done)
  Timed t(2);
  t.graph = capture_graph(stream, [&] { ex.enqueue_network(batch); });
  YOLO12_CUDA_CHECK(cudaGraphInstantiate(&t.exec, t.graph, 0));
  std::vector<double> ms;
  for (int i = 0; i < warmup + iters; ++i) {
    YOLO12_CUDA_CHECK(cudaEventRecord(t.events[0], stream));
    YOLO12_CUDA_CHECK(cudaGraphLaunch(t.exec, stream));
    YOLO12_CUDA_CHECK(cudaEventRecord(t.events[1], stream));
    YOLO12_CUDA_CHECK(cudaEventSynchronize(t.events[1]));
    float v = 0;
    YOLO12_CUDA_CHECK(cudaEventElapsedTime(&v, t.events[0], t.events[1]));
    if (i >= warmup) ms.push_back(v);
  }
  return ms;
}

std::vector<OpRecord> profile_network(const CudaExecutor& ex, int batch, int warmup, int iters) {
  check_batch(ex, batch, iters);
  cudaStream_t stream = ex.stream();
  const std::vector<Step>& steps = ex.network();
  const std::size_t n = steps.size();
  Timed t(n + 1);
  // One op at a time on one stream, each between two events: no side streams and no programmatic
  // launches, so that an op's time is its own.
  const PdlOff serial;
  t.graph = capture_graph(stream, [&] {
    YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(t.events[0], stream, cudaEventRecordExternal));
    for (std::size_t i = 0; i < n; ++i) {
      steps[i].run(batch, stream);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(t.events[i + 1], stream, cudaEventRecordExternal));
    }
  });
  YOLO12_CUDA_CHECK(cudaGraphInstantiate(&t.exec, t.graph, 0));
  std::vector<std::vector<float>> ms(n);
  for (int it = 0; it < warmup + iters; ++it) {
    YOLO12_CUDA_CHECK(cudaGraphLaunch(t.exec, stream));
    YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (it < warmup) continue;
    for (std::size_t i = 0; i < n; ++i) {
      float v = 0;
      YOLO12_CUDA_CHECK(cudaEventElapsedTime(&v, t.events[i], t.events[i + 1]));
      ms[i].push_back(v);
    }
  }
  std::vector<OpRecord> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::sort(ms[i].begin(), ms[i].end());
    out[i].label = steps[i].label;
    out[i].bytes = steps[i].bytes_per_image * batch + steps[i].weight_bytes;
    out[i].flops = steps[i].flops_per_image * batch;
    out[i].median_ms = ms[i][ms[i].size() / 2];
  }
  return out;
}

}  // namespace yolo12::cuda
