// cli/video.cpp - video files, cameras and streams: decode, detect and encode in three threads
// joined by bounded queues.
//
//   decoder thread --frames--> this thread (detect, track, JSON, labels) --annotated--> encoder thread
//
// Files: every frame is decoded and written; a full queue makes the decoder wait, so nothing is lost,
// and the decoder keeps kFileQueue frames ready so that detection never waits for one. A file that
// ends well before its container's frame count is reported as truncated.
// Live sources (cameras, rtsp/rtmp/udp/..., http without a frame count): the frames queue holds at
// most two frames and drops the oldest when detection is slower than the source, so the output stays
// current instead of falling further behind; drops are counted and reported. A live source that stops
// delivering frames is reopened, at most --stream-retries times over the whole run of that source,
// with growing pauses, and given up when no frame came for --stream-timeout seconds (FFmpeg's own
// open and read timeouts are set inside that window). The saved video of a live source gets the
// frame rate measured over its first frames.
// Ctrl-C: the decoder stops at once; a decoder stuck in FFmpeg is left behind after one second and
// the process ends without waiting for it (run_video returns false).
// Several sources may run at once, each on a detector of its own (cli/spread.cpp): what they share is
// in the RunContext, which locks it.
// --vid-stride N detects every Nth frame; the frames in between are still written, annotated with the
// latest detections, so the saved video keeps the source's frame count and frame rate.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include "run.hpp"

namespace yolo12_cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kFirstReopenPause = 0.5;  // seconds; doubles on each try (0.5, 1, 2, 4, 8, ...)
constexpr std::size_t kFileQueue = 4;      // frames waiting for detection, file sources
constexpr std::size_t kLiveQueue = 2;      // frames waiting for detection, live sources
constexpr std::size_t kEncodeQueue = 8;    // annotated frames waiting for the encoder
constexpr double kStopGrace = 0.7;         // seconds a decoder gets to stop after Ctrl-C
constexpr double kRateWindow = 2.0;        // seconds of a live source's frames to measure its rate
constexpr std::size_t kRateFrames = 30;    // or this many frames, whichever comes first
constexpr auto kPoll = std::chrono::milliseconds(100);

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A queue of at most `capacity` items between two threads. push() waits while the queue is full, or,
// with drop_oldest, throws the oldest item away instead. close() wakes everybody: push() then refuses
// new items and pop() returns false once the queue is empty.
template <typename T>
class BoundedQueue {
 public:
  enum class Pop { Item, Closed, Timeout };

  BoundedQueue(std::size_t capacity, bool drop_oldest) : capacity_(capacity), drop_oldest_(drop_oldest) {}

  // Sets the capacity and the policy before the first push (a stream is live or not once opened).
  void configure(std::size_t capacity, bool drop_oldest) {
    std::lock_guard<std::mutex> lock(mutex_);
    capacity_ = capacity;
    drop_oldest_ = drop_oldest;
  }

  bool push(T item) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!drop_oldest_) not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    if (items_.size() >= capacity_) {
      items_.pop_front();
      ++dropped_;
    }
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  bool pop(T& out) {
    Pop p;
    while ((p = pop_for(out, std::chrono::hours(1))) == Pop::Timeout) {
    }
    return p == Pop::Item;
  }

  template <typename Duration>
  Pop pop_for(T& out, Duration timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!not_empty_.wait_for(lock, timeout, [&] { return closed_ || !items_.empty(); })) return Pop::Timeout;
    if (items_.empty()) return Pop::Closed;
    out = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return Pop::Item;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  long dropped() {
    std::lock_guard<std::mutex> lock(mutex_);
    return dropped_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool drop_oldest_;
  bool closed_ = false;
  long dropped_ = 0;
};

struct DecodedFrame {
  long index = 0;  // 0-based position in the source
  cv::Mat pixels;
  bool detect = false;  // false: skipped by --vid-stride
  double decode_ms = 0;
  Clock::time_point read_at;  // when the decoder had it (a live source's frame rate is measured from these)
};

struct AnnotatedFrame {
  cv::Mat pixels;
  std::vector<Object> objects;
  Clock::time_point read_at;
};

// What the decoder learnt when the source opened.
struct SourceInfo {
  bool live = false;
  long frame_count = 0;  // the container's count (files); 0 when unknown
  double fps = 0;        // the container's rate; 0 when it gives none
  int width = 0, height = 0;
};

// rtsp://, rtmp://, udp:// ... are always live; an http(s) URL is live when it has no frame count
// (an MJPEG or HLS stream rather than a file served over HTTP).
bool is_live(const Input& input, const cv::VideoCapture& capture) {
  if (input.kind == InputKind::Camera) return true;
  if (input.kind != InputKind::Stream) return false;
  const bool http = input.name.rfind("http", 0) == 0 || input.name.rfind("HTTP", 0) == 0;
  return !http || capture.get(cv::CAP_PROP_FRAME_COUNT) <= 0;
}

// The decoder thread and everything it shares with the others. Owned through a shared_ptr by this
// thread and by the decoder thread, so that a decoder stuck in FFmpeg after Ctrl-C can be left behind.
class Decoder {
 public:
  Decoder(const Input& input, const CliOptions& opt, Console& console)
      : input_(input),
        vid_stride_(opt.vid_stride),
        timeout_s_(opt.stream_timeout),
        retries_(opt.stream_retries),
        console_(console),
        frames(kFileQueue, false) {}

  // The decoder thread: open, then read until the end, a stop, or a lost live source.
  void run() {
    try {
      decode();
    } catch (const std::exception& e) {
      finish("decoding failed: " + std::string(e.what()));
      return;
    }
    finish(error_);
  }

  // Waits until the source is open (true) or could not be (false); polls stop_requested().
  // *abandon is set when Ctrl-C came and the decoder did not end within kStopGrace.
  bool wait_open(bool* abandon) {
    std::unique_lock<std::mutex> lock(mutex_);
    Clock::time_point stop_seen{};
    while (!opened_ && !finished_) {
      changed_.wait_for(lock, kPoll);
      if (stop_requested()) {
        if (stop_seen == Clock::time_point{}) stop_seen = Clock::now();
        if (seconds_since(stop_seen) > kStopGrace && !finished_) {
          *abandon = true;
          return false;
        }
      }
    }
    return opened_;
  }

  // Stops the decoder from here (the detector failed) and no longer lets it print.
  void cancel() {
    cancel_ = true;
    frames.close();
  }
  void abandon() {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
    cancel();
  }
  // Waits up to `seconds` for the decoder thread to finish; true when it did.
  bool wait_finished(double seconds) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return finished_; });
  }

  SourceInfo info() {
    std::lock_guard<std::mutex> lock(mutex_);
    return info_;
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mutex_);
    return final_error_;
  }
  long frames_read() const { return frames_read_; }

  BoundedQueue<DecodedFrame> frames;

 private:
  bool open(double timeout_s) {
    capture_.release();
    const int ms = std::max(1, static_cast<int>(timeout_s * 1000));
    try {
      if (input_.kind == InputKind::Camera) return capture_.open(input_.camera);
      // FFmpeg only, for files and URLs (OpenCV would otherwise try GStreamer, which prints its own
      // complaints, and image sequences), with its open and read timeouts inside our window.
      const std::vector<int> params = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, ms, cv::CAP_PROP_READ_TIMEOUT_MSEC,
                                       std::max(1, static_cast<int>(timeout_s_ * 500))};
      return capture_.open(input_.name, cv::CAP_FFMPEG, params);
    } catch (const cv::Exception&) {
      return false;
    }
  }

  bool stopping() const { return stop_requested() || cancel_; }

  void warn(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!abandoned_) console_.warning(line);
  }

  // Pauses up to `seconds`, waking early on a stop.
  void pause(double seconds) {
    for (const Clock::time_point start = Clock::now(); seconds_since(start) < seconds && !stopping();)
      std::this_thread::sleep_for(std::min(kPoll, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      std::chrono::duration<double>(seconds - seconds_since(start)))));
  }

  void decode() {
    if (!open(timeout_s_)) {
      error_ = input_.kind == InputKind::Video
                   ? "cannot open video (not a video, or a codec this OpenCV build lacks)"
                   : "cannot open " + std::string(input_.kind == InputKind::Camera ? "camera" : "stream");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      info_.live = is_live(input_, capture_);
      info_.frame_count = info_.live ? 0 : std::max(0L, static_cast<long>(capture_.get(cv::CAP_PROP_FRAME_COUNT)));
      const double fps = capture_.get(cv::CAP_PROP_FPS);
      info_.fps = std::isfinite(fps) && fps > 0 && fps <= 1000 ? fps : 0;
      info_.width = static_cast<int>(capture_.get(cv::CAP_PROP_FRAME_WIDTH));
      info_.height = static_cast<int>(capture_.get(cv::CAP_PROP_FRAME_HEIGHT));
      frames.configure(info_.live ? kLiveQueue : kFileQueue, /*drop_oldest=*/info_.live);
      opened_ = true;
    }
    changed_.notify_all();

    const bool live = info().live;
    int reopenings = 0;
    Clock::time_point last_frame = Clock::now();
    while (!stopping()) {
      cv::Mat pixels;
      const Clock::time_point t0 = Clock::now();
      bool ok = false;
      try {
        ok = capture_.read(pixels) && !pixels.empty();
      } catch (const cv::Exception&) {
        ok = false;
      }
      if (ok) {
        last_frame = Clock::now();
        DecodedFrame frame;
        frame.index = frames_read_++;
        frame.pixels = std::move(pixels);
        frame.detect = frame.index % vid_stride_ == 0;
        frame.decode_ms = seconds_since(t0) * 1000;
        frame.read_at = last_frame;
        if (!frames.push(std::move(frame))) return;  // the detector side gave up
        continue;
      }
      if (!live || stopping()) return;  // the end of a file, or Ctrl-C
      // A live source without a frame: reopen it while the window and the budget allow.
      const double left = timeout_s_ - seconds_since(last_frame);
      if (left <= 0) {
        error_ = "no frame for " + format_ms(timeout_s_) + " s (--stream-timeout)";
        return;
      }
      if (reopenings == retries_) {
        error_ = "stream lost and could not be reopened after " + std::to_string(retries_) + " tries (--stream-retries)";
        return;
      }
      const double wait = kFirstReopenPause * std::pow(2.0, reopenings);
      if (wait >= left) {  // the pause alone would end the window
        error_ = "no frame for " + format_ms(timeout_s_) + " s (--stream-timeout)";
        return;
      }
      ++reopenings;
      warn(input_.name + ": stream lost, reopening in " + format_ms(wait) + " s (try " + std::to_string(reopenings) +
           "/" + std::to_string(retries_) + ")");
      pause(wait);
      if (stopping()) return;
      open(std::max(0.001, timeout_s_ - seconds_since(last_frame)));  // a failed open shows as a failed read
    }
  }

  void finish(const std::string& error) {
    capture_.release();
    frames.close();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      final_error_ = error;
      finished_ = true;
    }
    changed_.notify_all();
  }

  const Input input_;
  const int vid_stride_;
  const double timeout_s_;
  const int retries_;
  Console& console_;
  cv::VideoCapture capture_;
  std::atomic<bool> cancel_{false};
  std::atomic<long> frames_read_{0};
  std::string error_;  // decoder thread only

  std::mutex mutex_;  // guards what follows
  std::condition_variable changed_;
  SourceInfo info_;
  bool opened_ = false, finished_ = false, abandoned_ = false;
  std::string final_error_;
};

// The video writer: H.264 where this OpenCV build can encode it, else MPEG-4 Part 2 (said once).
bool open_writer(cv::VideoWriter& writer, const std::string& path, double fps, cv::Size size, Console& console) {
  static std::atomic<bool> h264_missing{false};
  try {
    if (!h264_missing && writer.open(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('a', 'v', 'c', '1'), fps, size))
      return true;
    if (!h264_missing.exchange(true))
      console.info("note: no H.264 encoder in this OpenCV/FFmpeg build; videos are saved as MPEG-4 Part 2");
    return writer.open(path, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, size);
  } catch (const cv::Exception&) {
    return false;
  }
}

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace

bool run_video(RunContext& ctx, yolo12::Detector& detector, const Input& input, std::size_t number, std::size_t total,
               const std::string& base) {
  const CliOptions& opt = ctx.options;
  const auto& names = ctx.info.class_names;
  const std::string& source = input.name;
  const std::string kind = input.kind == InputKind::Video ? "video" : input.kind == InputKind::Camera ? "camera" : "stream";

  auto decoder = std::make_shared<Decoder>(input, opt, ctx.console);
  std::thread decoder_thread([decoder] { decoder->run(); });
  // Leaves a decoder stuck in FFmpeg behind (Ctrl-C): it holds its own reference and never prints.
  const auto leave_decoder = [&] {
    decoder->abandon();
    decoder_thread.detach();
    ctx.console.warning(source + ": the " + kind + " did not stop within " + format_ms(kStopGrace) +
                        " s; leaving it behind");
    return false;
  };

  bool abandon = false;
  if (!decoder->wait_open(&abandon)) {
    if (abandon) return leave_decoder();
    decoder_thread.join();
    if (!stop_requested()) ctx.fail_input(source, decoder->error());
    return true;
  }
  const SourceInfo info = decoder->info();
  const bool live = info.live;
  ctx.console.verbose(source + ": " + (live ? "live " : "") + kind + ", " + std::to_string(info.width) + "x" +
                      std::to_string(info.height) + (info.fps > 0 ? " at " + format_ms(info.fps) + " fps" : "") +
                      (info.frame_count ? ", " + std::to_string(info.frame_count) + " frames" : ""));

  const std::string video_path = ctx.run_dir + "/" + base + ".mp4";
  const bool save_video = opt.save && ctx.may_write(video_path);

  BoundedQueue<AnnotatedFrame> annotated(kEncodeQueue, /*drop_oldest=*/false);
  long frames_written = 0;  // written by the encoder, read after join
  bool writer_failed = false;
  double saved_fps = 0;

  // ---- encoder: draw and write every frame it gets, in order. A live source's first frames wait
  // until its rate is measured.
  auto encode_loop = [&] {
    cv::VideoWriter writer;
    cv::Size size;
    std::vector<AnnotatedFrame> waiting;
    const auto write = [&](AnnotatedFrame& frame) {
      if (!writer.isOpened() && !writer_failed) {
        size = frame.pixels.size();
        writer_failed = !open_writer(writer, video_path, saved_fps, size, ctx.console);
        if (writer_failed) ctx.fail_output(video_path, "cannot create the video file");
      }
      if (writer_failed) return;
      draw_detections(frame.pixels, frame.objects, names, ctx.draw_style());
      if (frame.pixels.size() != size) cv::resize(frame.pixels, frame.pixels, size);  // a reopened stream
      writer.write(frame.pixels);
      ++frames_written;
    };
    const auto flush_waiting = [&] {
      if (saved_fps == 0) {
        const double span = waiting.size() > 1 ? std::chrono::duration<double>(waiting.back().read_at - waiting.front().read_at).count() : 0;
        saved_fps = span > 0 ? (waiting.size() - 1) / span : info.fps > 0 ? info.fps : 30;
        saved_fps = std::min(std::max(saved_fps, 1.0), 240.0);
        ctx.console.verbose(video_path + ": saved at " + format_ms(saved_fps) + " fps (" +
                            (live ? "measured over the first " + std::to_string(waiting.size()) + " frames" : "the file's") + ")");
      }
      for (AnnotatedFrame& f : waiting) write(f);
      waiting.clear();
    };
    AnnotatedFrame frame;
    while (annotated.pop(frame)) {
      if (saved_fps == 0 && live) {
        waiting.push_back(std::move(frame));
        const double span = std::chrono::duration<double>(waiting.back().read_at - waiting.front().read_at).count();
        if (span >= kRateWindow || waiting.size() >= kRateFrames) flush_waiting();
        continue;
      }
      if (saved_fps == 0) flush_waiting();
      write(frame);
    }
    flush_waiting();
    writer.release();  // writes the file's index: the video is complete and playable
  };

  // ---- detector (this thread): detect, track, report, hand frames to the encoder.
  const std::string label = kind + " " + std::to_string(number) + "/" + std::to_string(total);
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress;
  std::unique_ptr<yolo12::ByteTracker> tracker = ctx.make_tracker();
  yolo12::Result latest;         // the detections drawn on frames skipped by --vid-stride
  std::vector<Object> latest_objects;
  long frames_done = 0, frames_detected = 0;
  double waited_s = 0;  // time detection spent waiting for a decoded frame (after the first)
  bool left_behind = false;
  DecodedFrame frame;
  auto detect_loop = [&] {
    Clock::time_point stop_seen{};
    for (;;) {
      const Clock::time_point wait_start = Clock::now();
      const auto got = decoder->frames.pop_for(frame, kPoll);
      if (frames_done > 0) waited_s += seconds_since(wait_start);
      if (got == BoundedQueue<DecodedFrame>::Pop::Closed) return;
      if (got == BoundedQueue<DecodedFrame>::Pop::Timeout) {
        if (stop_requested()) {
          if (stop_seen == Clock::time_point{}) stop_seen = Clock::now();
          if (seconds_since(stop_seen) > kStopGrace) {
            left_behind = true;
            return;
          }
        }
        continue;
      }
      if (frame.detect) {
        latest = detector.detect(view_of(frame.pixels));
        latest_objects = ctx.objects(latest, tracker.get());
        ++frames_detected;
        ctx.count(latest);
        ctx.write_json(result_json(source, frame.index, latest, latest_objects, names, frame.decode_ms));
        const std::string position = "(frame " + std::to_string(frame.index + 1) +
                                     (info.frame_count ? "/" + std::to_string(info.frame_count) : std::string()) + ")";
        ctx.console.summary(label + " " + position + " " + source + ": " + std::to_string(latest.input_height) +
                            "x" + std::to_string(latest.input_width) + " " + count_summary(latest_objects, names) +
                            ", " + format_ms(latest.times.inference_ms) + "ms");
        // Label files and crops number frames from 1, like the summary line and Ultralytics.
        if (opt.saves()) ctx.save_labels_and_crops(frame.pixels, latest, latest_objects, base + "_" + std::to_string(frame.index + 1));
      }
      ++frames_done;
      if (save_video) annotated.push(AnnotatedFrame{std::move(frame.pixels), latest_objects, frame.read_at});

      if (ctx.console.shows_progress() && seconds_since(last_progress) > 0.2) {
        last_progress = Clock::now();
        const double elapsed = seconds_since(start);
        const double rate = frames_done / std::max(elapsed, 1e-6);
        std::string line = source + "  " + std::to_string(frames_done) +
                           (info.frame_count ? "/" + std::to_string(info.frame_count) : std::string()) + " frames  " +
                           format_ms(rate) + " fps  ";
        if (live)
          line += std::to_string(decoder->frames.dropped()) + " dropped  " + clock_text(elapsed) + " elapsed";
        else if (info.frame_count > frames_done)
          line += clock_text((info.frame_count - frames_done) / std::max(rate, 1e-6)) + " left";
        ctx.console.progress(line);
      }
    }
  };

  // Every loop catches what it could throw (an exception escaping a std::thread ends the process),
  // and a loop that fails closes its queues so that the others never wait for it.
  std::thread encoder;
  if (save_video) {
    encoder = std::thread([&] {
      try {
        encode_loop();
      } catch (const std::exception& e) {
        ctx.fail_output(video_path, std::string("encoding failed (") + e.what() + "); the video stops at frame " +
                                        std::to_string(frames_written));
        annotated.close();  // the detector's pushes now return at once
      }
    });
  }
  std::string detect_error;
  try {
    detect_loop();
  } catch (const std::exception& e) {
    // The detector may be unusable (a CUDA failure): stop this source, report it, go on with the rest.
    detect_error = "frame " + std::to_string(frame.index) + ": " + e.what();
    decoder->cancel();
  }
  if (left_behind || !decoder->wait_finished(stop_requested() ? kStopGrace : 1e6)) {
    annotated.close();
    if (encoder.joinable()) encoder.join();
    ctx.console.end_progress();
    return leave_decoder();
  }
  decoder_thread.join();
  annotated.close();
  if (encoder.joinable()) encoder.join();
  ctx.console.end_progress();

  // ---- the outcome of this source.
  const long frames_read = decoder->frames_read();
  const long dropped = decoder->frames.dropped();
  const double elapsed = seconds_since(start);
  std::string outcome = label + " " + source + ": ";
  if (stop_requested())
    outcome += "interrupted after " + std::to_string(frames_read) + " frames";
  else
    outcome += std::to_string(frames_read) + " frames";
  outcome += ", " + std::to_string(frames_detected) + " detected in " + format_ms(elapsed) + " s (" +
             format_ms(frames_done / std::max(elapsed, 1e-6)) + " fps, decoding included)";
  if (dropped)
    ctx.console.warning(source + ": " + std::to_string(dropped) + " of " + std::to_string(frames_read) +
                        " frames dropped because detection is slower than the source");
  if (save_video && !writer_failed) {
    struct stat st;
    if (frames_written > 0 && (::stat(video_path.c_str(), &st) != 0 || st.st_size == 0))
      ctx.fail_output(video_path, "the video file was not written (disk full?)");
    else
      outcome += "; saved " + video_path + " (" + std::to_string(frames_written) + " frames)";
  }
  ctx.console.info(outcome);
  ctx.console.verbose(source + ": detection waited " + format_ms(waited_s) + " s in all for decoded frames");

  // A file that ends well before its container's frame count was cut short or is corrupt.
  const long missing = info.frame_count - frames_read;
  const std::string error = decoder->error();
  if (!detect_error.empty()) {
    ctx.fail_input(source, detect_error);
  } else if (!error.empty()) {
    ctx.fail_input(source, error + " (after " + std::to_string(frames_read) + " frames)");
  } else if (frames_read == 0 && !stop_requested()) {
    ctx.fail_input(source, "no frame could be decoded (corrupt video, or a codec this OpenCV build lacks)");
  } else if (!live && !stop_requested() && missing > std::max(1L, info.frame_count / 100)) {
    ctx.fail_input(source, "video ended after " + std::to_string(frames_read) + " of its " +
                               std::to_string(info.frame_count) + " frames (truncated or corrupt file)");
  }
  return true;
}

}  // namespace yolo12_cli
