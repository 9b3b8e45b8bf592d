// cpu/thread_pool.cpp - see thread_pool.hpp.
#include "backends/cpu/thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace yolo12::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int threads, std::chrono::microseconds spin) : spin_(spin) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

template <typename Done>
bool ThreadPool::spin_until(const Done& done) const {
  if (spin_.count() <= 0) return done();
  using clock = std::chrono::steady_clock;
  const clock::time_point start = clock::now();
  clock::time_point yielded = start;
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 32 == 0) {  // about 1-4 us of pauses between clock reads
      const clock::time_point now = clock::now();
      if (now - start >= spin_) return done();
      if (now - yielded >= std::chrono::microseconds(8)) {
        std::this_thread::yield();
        yielded = now;
      }
    }
  }
}

void ThreadPool::run_tasks(int worker) {
  for (;;) {
    const std::ptrdiff_t task = next_.fetch_add(1);
    if (task >= job_size_) return;
    try {
      (*job_)(task, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(job_size_);  // stop handing out tasks
    }
  }
}

void ThreadPool::worker_loop(int worker) {
  std::size_t seen = 0;
  for (;;) {
    // A new loop is published by generation_ (stored after job_, job_size_, next_ and busy_): a worker that sees it
    // change by polling sees those too.
    const auto ready = [&] { return stop_.load() || generation_.load() != seen; };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, ready);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    run_tasks(worker);
    // The caller waits for busy_ == 0 under mutex_ (or polls it): the last worker notifies under the mutex, so that
    // a caller between its check and its wait cannot miss the notification.
    if (busy_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::ptrdiff_t n, const std::function<void(std::ptrdiff_t, int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (std::ptrdiff_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_size_ = n;
    next_.store(0);
    error_ = nullptr;
    busy_.store(static_cast<int>(workers_.size()));
    generation_.fetch_add(1);  // last: publishes the loop to polling workers
  }
  wake_.notify_all();
  run_tasks(0);
  const auto drained = [&] { return busy_.load() == 0; };
  std::exception_ptr error;
  {
    if (!spin_until(drained)) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, drained);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace yolo12::cpu
