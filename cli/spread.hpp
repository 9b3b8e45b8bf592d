// cli/spread.hpp - how yolo12-infer spreads work over the detectors of a pool (several devices, or
// several workers on one): items computed on worker threads, results used in order on this thread.
// run_inputs() (run.hpp, cli/spread.cpp) decides what goes where.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace yolo12_cli {

// Computes items 0 .. count-1 on `workers` threads, item k on worker k % workers (produce(k, worker)
// returns it), and hands them to consume(k, item) on the calling thread in order k = 0, 1, 2, ...
// At most 2 x workers items are computed ahead of the one being consumed, so memory stays bounded
// whatever count is. stop() is polled (every 100 ms while waiting): once it is true no worker starts
// an item, the items already started are finished and consumed in order up to the first one that was
// not, and the call returns. An exception from produce is rethrown here when its item's turn comes;
// one from consume ends the run the same way (the workers are stopped and joined first). Returns the
// number of items consumed.
template <typename Item, typename Produce, typename Consume, typename Stop>
std::size_t run_in_order(std::size_t workers, std::size_t count, Produce produce, Consume consume, Stop stop) {
  if (workers == 0 || count == 0) return 0;
  workers = std::min(workers, count);
  const std::size_t window = 2 * workers;
  enum class State { Free, Working, Ready };
  struct Slot {
    State state = State::Free;
    Item item{};
    std::exception_ptr error;
  };
  std::vector<Slot> slots(window);  // item k lives in slots[k % window] from started to consumed
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t consumed = 0;
  bool quit = false;
  const auto poll = std::chrono::milliseconds(100);

  const auto work = [&](std::size_t worker) {
    for (std::size_t k = worker; k < count; k += workers) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        while (!quit && !stop() && k >= consumed + window) changed.wait_for(lock, poll);
        if (quit || stop()) return;
        slots[k % window].state = State::Working;
      }
      Item item{};
      std::exception_ptr error;
      try {
        item = produce(k, worker);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        slots[k % window].item = std::move(item);
        slots[k % window].error = error;
        slots[k % window].state = State::Ready;
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  // Stops and joins the workers however this function is left.
  struct Join {
    std::vector<std::thread>& threads;
    std::mutex& mutex;
    std::condition_variable& changed;
    bool& quit;
    ~Join() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        quit = true;
      }
      changed.notify_all();
      for (std::thread& t : threads) t.join();
    }
  } join{threads, mutex, changed, quit};
  for (std::size_t w = 0; w < workers; ++w) threads.emplace_back(work, w);

  for (std::size_t k = 0; k < count; ++k) {
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      Slot& s = slots[k % window];
      while (s.state != State::Ready) {
        if (s.state == State::Free && stop()) return consumed;  // never started: the run ends here
        changed.wait_for(lock, poll);
      }
      slot = std::move(s);
      s = Slot{};
    }
    if (slot.error) std::rethrow_exception(slot.error);
    consume(k, slot.item);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++consumed;
    }
    changed.notify_all();
  }
  return consumed;
}

}  // namespace yolo12_cli
