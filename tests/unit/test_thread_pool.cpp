// tests/unit/test_thread_pool.cpp - cpu::ThreadPool (src/backends/cpu/thread_pool.hpp), sleeping and polling (`spin`):
// every task of every loop runs exactly once with a worker index in range, back-to-back loops of every size (the
// polling workers must see each new loop, and the caller each loop's end), parallel_for returns only after its slowest
// task, an exception from a task reaches the caller and leaves the pool usable, and a polling pool is destroyed
// without hanging. The staging pools of the CUDA backend poll for 1 ms (cuda/preprocess.cu), the CPU executor's pool
// for 200 us (cpu/executor.cpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cpu/thread_pool.hpp"
#include "catch.hpp"

using yolo12::cpu::ThreadPool;
using std::chrono::microseconds;

namespace {

// Runs `loops` loops of varying sizes; every task must run once per loop, with its own index and a worker in range.
void check_loops(ThreadPool& pool, int loops) {
  std::vector<std::atomic<int>> hits(97);
  for (int l = 0; l < loops; ++l) {
    const std::ptrdiff_t n = 1 + (l * 37) % 97;  // 1 .. 97: fewer and more tasks than threads
    for (auto& h : hits) h.store(0);
    std::atomic<int> bad_worker{0};
    pool.parallel_for(n, [&](std::ptrdiff_t task, int worker) {
      if (worker < 0 || worker >= pool.size()) bad_worker.fetch_add(1);
      hits[static_cast<std::size_t>(task)].fetch_add(1);
    });
    REQUIRE(bad_worker.load() == 0);
    for (std::ptrdiff_t i = 0; i < 97; ++i) {
      INFO("loop " << l << " of " << n << " tasks, task " << i);
      REQUIRE(hits[static_cast<std::size_t>(i)].load() == (i < n ? 1 : 0));
    }
  }
}

}  // namespace

TEST_CASE("ThreadPool runs every task once per loop, sleeping or polling", "[cpu][thread_pool]") {
  for (const long spin_us : {0L, 50L, 100000L}) {
    for (const int threads : {1, 2, 4, 9}) {
      INFO("spin " << spin_us << " us, " << threads << " threads");
      ThreadPool pool(threads, microseconds(spin_us));
      REQUIRE(pool.size() == threads);
      check_loops(pool, 300);
    }
  }
}

TEST_CASE("ThreadPool: a loop's results are complete when parallel_for returns", "[cpu][thread_pool]") {
  // The caller reads what the workers wrote, without atomics: the end of a loop (polled or waited for) must order
  // the workers' writes before the caller's reads. Under ThreadSanitizer a missing order is a report; here a
  // missing wait is a wrong sum.
  for (const long spin_us : {0L, 100000L}) {
    ThreadPool pool(4, microseconds(spin_us));
    std::vector<long> out(64);
    for (int l = 0; l < 200; ++l) {
      pool.parallel_for(64, [&](std::ptrdiff_t t, int) {
        long s = 0;
        for (int i = 0; i <= 200 * static_cast<int>(t % 5); ++i) s += i;  // uneven tasks
        out[static_cast<std::size_t>(t)] = s + l;
      });
      long sum = 0, want = 0;
      for (std::size_t t = 0; t < out.size(); ++t) {
        sum += out[t];
        const long m = 200 * static_cast<long>(t % 5);
        want += m * (m + 1) / 2 + l;
      }
      REQUIRE(sum == want);
    }
  }
}

TEST_CASE("ThreadPool: parallel_for returns only after its slowest task", "[cpu][thread_pool]") {
  // Task t sleeps (t + 1) ms, so the worker that takes the last task finishes well after the others: a caller that
  // stopped waiting for the workers early (polling or sleeping) would return before that task's flag is set.
  for (const long spin_us : {0L, 100000L}) {
    INFO("spin " << spin_us << " us");
    ThreadPool pool(4, microseconds(spin_us));
    for (int round = 0; round < 5; ++round) {
      std::vector<std::atomic<int>> finished(static_cast<std::size_t>(pool.size()));
      pool.parallel_for(pool.size(), [&](std::ptrdiff_t t, int) {
        std::this_thread::sleep_for(std::chrono::milliseconds(t + 1));
        finished[static_cast<std::size_t>(t)].store(1);
      });
      for (std::size_t t = 0; t < finished.size(); ++t) {
        INFO("task " << t);
        REQUIRE(finished[t].load() == 1);
      }
    }
  }
}

TEST_CASE("ThreadPool: a task's exception reaches the caller and the pool goes on", "[cpu][thread_pool]") {
  for (const long spin_us : {0L, 100000L}) {
    INFO("spin " << spin_us << " us");
    ThreadPool pool(4, microseconds(spin_us));
    for (int round = 0; round < 20; ++round) {
      REQUIRE_THROWS_AS(pool.parallel_for(50,
                                          [&](std::ptrdiff_t t, int) {
                                            if (t == 7 + round) throw std::runtime_error("task failed");
                                          }),
                        std::runtime_error);
      check_loops(pool, 5);
    }
  }
}

TEST_CASE("ThreadPool: a polling pool is destroyed at once, busy or idle", "[cpu][thread_pool]") {
  // A poll of 10 s: the destructor must stop the polling workers rather than wait the poll out.
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    ThreadPool pool(4, microseconds(10000000));
    if (i % 2) pool.parallel_for(16, [](std::ptrdiff_t, int) {});
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(s < 5.0);
}

TEST_CASE("ThreadPool: the time one loop takes, sleeping and polling", "[.bench][thread_pool]") {
  // Tiny loops one after another with a gap between them, as a video at batch 1 packs frames; the median time of a
  // loop. Not a test: `test_thread_pool "[.bench]"`.
  for (const long spin_us : {0L, 1000L}) {
    ThreadPool pool(static_cast<int>(std::max(2u, std::thread::hardware_concurrency())), microseconds(spin_us));
    std::vector<double> t;
    for (int l = 0; l < 400; ++l) {
      std::this_thread::sleep_for(microseconds(300));
      const auto a = std::chrono::steady_clock::now();
      pool.parallel_for(pool.size() * 2, [](std::ptrdiff_t, int) {});
      t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    }
    std::sort(t.begin(), t.end());
    std::printf("thread pool of %d, spin %ld us: one empty loop after a 300 us gap, median %.1f us, p90 %.1f us\n",
                pool.size(), spin_us, t[t.size() / 2], t[t.size() * 9 / 10]);
  }
}
