// cpu/thread_pool.hpp - a fixed set of worker threads that run one parallel loop at a time.
//
// parallel_for(n, fn) calls fn(task, worker) for every task in [0, n), spread over the workers and
// the calling thread; `worker` (0 .. size() - 1) indexes per-thread scratch memory. Tasks are taken
// from a shared counter, so uneven tasks balance themselves. An exception thrown by a task is caught
// and rethrown on the calling thread after the loop has drained. One caller at a time.
//
// `spin`: how long a worker keeps polling for the next loop after finishing one, and the caller for the
// workers' end of a loop, before sleeping on a condition variable. 0 (the default): sleep at once. A
// sleeping thread takes tens of microseconds to wake (more from a deep idle state), twice per loop (the
// workers, then the caller); short, frequent loops spend more than their work on that: packing one video
// frame every 0.6 ms (cuda/preprocess.cu's staging pools, 1 ms of polling), or the CPU executor's one loop
// per op (cpu/executor.cpp, 200 us). The poll pauses the core (x86 `pause`) and yields the thread every
// 8 us, so that oversubscribed cores still run the threads that have work.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace yolo12::cpu {

class ThreadPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency() (at least 1). The caller counts as one.
  explicit ThreadPool(int threads, std::chrono::microseconds spin = std::chrono::microseconds(0));
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  void parallel_for(std::ptrdiff_t n, const std::function<void(std::ptrdiff_t task, int worker)>& fn);

 private:
  void worker_loop(int worker);
  void run_tasks(int worker);
  // Polls until done() is true or `spin_` has passed; true if done() became true.
  template <typename Done>
  bool spin_until(const Done& done) const;

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::ptrdiff_t, int)>* job_ = nullptr;
  std::ptrdiff_t job_size_ = 0;
  std::atomic<std::ptrdiff_t> next_{0};
  const std::chrono::microseconds spin_;
  // Atomic so that polling threads can read them. generation_ and stop_ change under mutex_; busy_ is set under it
  // and counted down by the workers without it (the last one then notifies under it).
  std::atomic<std::size_t> generation_{0};
  std::atomic<int> busy_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

}  // namespace yolo12::cpu
