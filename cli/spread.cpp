// cli/spread.cpp - run_inputs(): the inputs of a run, in order, over the detectors of the pool.
//
// Still images: each run of consecutive images goes through run_images, which sends batch k to
// detector k mod N (with --track to the first detector only: the images are one sequence) and reports
// them in input order. Videos, cameras and streams: each one on one detector, on a thread of its own,
// up to N at once; a source waits for a free detector, and a run of images waits until the sources
// before it are done (it uses every detector). Invalid inputs are reported in their turn.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "run.hpp"

namespace yolo12_cli {
namespace {

// "images 3..7", or "image 3" (1-based positions among the inputs).
std::string images_text(std::size_t first, std::size_t end) {
  return end - first == 1 ? "image " + std::to_string(first + 1)
                          : "images " + std::to_string(first + 1) + ".." + std::to_string(end);
}

// One thread per running source, on a detector that no other source uses meanwhile.
class SourceSlots {
 public:
  explicit SourceSlots(std::size_t size) : busy_(size, false), threads_(size) {}
  ~SourceSlots() { wait_all(); }

  // Waits for a free detector (giving up when Ctrl-C comes: false) and runs job(slot) on a new thread.
  bool start(const std::function<void(std::size_t slot)>& job) {
    std::unique_lock<std::mutex> lock(mutex_);
    std::size_t slot = busy_.size();
    for (;;) {
      for (std::size_t i = 0; i < busy_.size() && slot == busy_.size(); ++i)
        if (!busy_[i]) slot = i;
      if (slot < busy_.size()) break;
      if (stop_requested()) return false;
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (threads_[slot].joinable()) threads_[slot].join();  // it has ended: busy_ was cleared as it ended
    busy_[slot] = true;
    threads_[slot] = std::thread([this, job, slot] {
      job(slot);
      {
        std::lock_guard<std::mutex> done(mutex_);
        busy_[slot] = false;
      }
      changed_.notify_all();
    });
    return true;
  }

  void wait_all() {
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> busy_;
  std::vector<std::thread> threads_;
};

}  // namespace

std::string device_names(const yolo12::DetectorPool& pool) {
  std::string names;
  for (std::size_t i = 0; i < pool.size(); ++i) names += (i ? ", " : "") + pool[i].device_name();
  return names;
}

bool run_inputs(RunContext& ctx, yolo12::DetectorPool& pool, const std::vector<Input>& inputs) {
  std::vector<yolo12::Detector*> detectors;
  for (std::size_t i = 0; i < pool.size(); ++i) detectors.push_back(&pool[i]);
  const bool spread = detectors.size() > 1;
  std::mutex left_mutex;
  bool left_thread_behind = false;
  SourceSlots sources(detectors.size());

  for (std::size_t i = 0; i < inputs.size() && !stop_requested();) {
    const Input& input = inputs[i];
    if (input.kind == InputKind::Invalid) {
      ctx.fail_input(input.name, input.error);
      ++i;
    } else if (input.kind == InputKind::Image) {
      std::size_t end = i;  // a run of consecutive images goes through the batcher together
      while (end < inputs.size() && inputs[end].kind == InputKind::Image) ++end;
      sources.wait_all();  // the images use every detector
      std::vector<yolo12::Detector*> workers = detectors;
      if (ctx.options.track && spread) {
        workers.resize(1);
        ctx.console.verbose("--track: " + images_text(i, end) + " form one sequence and run on " +
                            workers[0]->device_name() + " alone");
      } else if (spread) {
        ctx.console.verbose(images_text(i, end) + ": batches of " + std::to_string(ctx.options.batch) +
                            " in turn on " + device_names(pool));
      }
      run_images(ctx, workers, inputs, i, end);
      i = end;
    } else {
      // The output name is taken here, in input order, so that it does not depend on which source
      // starts first (a source that then cannot be opened keeps it).
      const std::string base = ctx.options.saves() ? ctx.claim_video(stem_of(input)) : "";
      const std::size_t number = i + 1;
      const bool started = sources.start([&, number, base](std::size_t slot) {
        yolo12::Detector& detector = *detectors[slot];
        if (spread) ctx.console.verbose(input.name + ": on " + detector.device_name());
        bool ok = true;
        try {
          ok = run_video(ctx, detector, input, number, inputs.size(), base);
        } catch (const std::exception& e) {  // an exception escaping a std::thread would end the process
          ctx.fail_input(input.name, e.what());
        }
        std::lock_guard<std::mutex> lock(left_mutex);
        left_thread_behind = left_thread_behind || !ok;
      });
      if (!started) break;
      ++i;
    }
  }
  sources.wait_all();
  return !left_thread_behind;
}

}  // namespace yolo12_cli
