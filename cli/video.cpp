// cli/video.cpp - video files, cameras and streams: decode, detect and encode in three
// threads joined by bounded queues.
//
//   decoder thread --frames--> this thread (detect, JSON, labels) --annotated--> encoder thread
//
// Files: every frame is decoded and written; a full queue makes the decoder wait, so nothing is lost.
// Live sources (cameras, rtsp/rtmp/udp/..., http without a frame count): the frames queue holds at
// most two frames and drops the oldest when detection is slower than the source, so the output stays
// current instead of falling further behind; drops are counted and reported. A live source that stops
// delivering frames is reopened up to kReopenTries times with growing pauses, then reported as failed.
// --vid-stride N detects every Nth frame; the frames in between are still written, annotated with the
// latest detections, so the saved video keeps the source's frame count and frame rate.
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

constexpr int kReopenTries = 5;            // attempts to reopen a lost live source
constexpr double kFirstReopenPause = 0.5;  // seconds; doubles on each try (0.5, 1, 2, 4, 8)
constexpr std::size_t kFileQueue = 4;      // frames waiting for detection, file sources
constexpr std::size_t kLiveQueue = 2;      // frames waiting for detection, live sources
constexpr std::size_t kEncodeQueue = 8;    // annotated frames waiting for the encoder

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A queue of at most `capacity` items between two threads. push() waits while the queue is full, or,
// with drop_oldest, throws the oldest item away instead. close() wakes everybody: push() then refuses
// new items and pop() returns false once the queue is empty.
template <typename T>
class BoundedQueue {
 public:
  BoundedQueue(std::size_t capacity, bool drop_oldest) : capacity_(capacity), drop_oldest_(drop_oldest) {}

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
    std::unique_lock<std::mutex> lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return false;
    out = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return true;
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
};

struct AnnotatedFrame {
  cv::Mat pixels;
  std::vector<yolo12::Detection> detections;
};

// Cameras go through OpenCV's default backend (V4L2 on Linux); files and URLs through FFmpeg, so that
// OpenCV does not try (and complain about) GStreamer and image sequences first. A file FFmpeg cannot
// open gets one more chance with any backend.
bool open_capture(cv::VideoCapture& capture, const Input& input) {
  try {
    if (input.kind == InputKind::Camera) return capture.open(input.camera);
    if (capture.open(input.name, cv::CAP_FFMPEG)) return true;
    return input.kind == InputKind::Video && capture.open(input.name, cv::CAP_ANY);
  } catch (const cv::Exception&) {
    return false;
  }
}

// rtsp://, rtmp://, udp:// ... are always live; an http(s) URL is live when it has no frame count
// (an MJPEG or HLS stream rather than a file served over HTTP).
bool is_live(const Input& input, const cv::VideoCapture& capture) {
  if (input.kind == InputKind::Camera) return true;
  if (input.kind != InputKind::Stream) return false;
  const bool http = input.name.rfind("http", 0) == 0 || input.name.rfind("HTTP", 0) == 0;
  return !http || capture.get(cv::CAP_PROP_FRAME_COUNT) <= 0;
}

std::string clock_text(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

yolo12::ImageView view_of(const cv::Mat& bgr) {
  yolo12::ImageView view;
  view.data = bgr.data;
  view.width = bgr.cols;
  view.height = bgr.rows;
  view.pitch = bgr.step;
  view.format = yolo12::PixelFormat::BGR8;
  return view;
}

}  // namespace

void run_video(RunContext& ctx, const Input& input, std::size_t number, std::size_t total) {
  const CliOptions& opt = ctx.options;
  const auto& names = ctx.detector.info().class_names;
  const std::string& source = input.name;

  cv::VideoCapture capture;
  if (!open_capture(capture, input)) {
    ctx.fail_input(source, input.kind == InputKind::Video
                               ? "cannot open video (not a video, or a codec this OpenCV build lacks)"
                               : "cannot open " + std::string(input.kind == InputKind::Camera ? "camera" : "stream"));
    return;
  }
  const bool live = is_live(input, capture);
  const long frame_count = live ? 0 : std::max(0L, static_cast<long>(capture.get(cv::CAP_PROP_FRAME_COUNT)));
  double fps = capture.get(cv::CAP_PROP_FPS);
  if (!std::isfinite(fps) || fps <= 0 || fps > 1000) fps = 30;  // streams often report nothing useful
  const std::string kind = input.kind == InputKind::Video ? "video" : input.kind == InputKind::Camera ? "camera" : "stream";
  ctx.console.verbose(source + ": " + (live ? "live " : "") + kind + ", " +
                      std::to_string(static_cast<int>(capture.get(cv::CAP_PROP_FRAME_WIDTH))) + "x" +
                      std::to_string(static_cast<int>(capture.get(cv::CAP_PROP_FRAME_HEIGHT))) + " at " +
                      format_ms(fps) + " fps" + (frame_count ? ", " + std::to_string(frame_count) + " frames" : ""));

  const std::string base = (opt.save || opt.save_txt) ? ctx.names.claim(stem_of(input)) : "";
  const std::string video_path = opt.output + "/" + base + ".mp4";

  BoundedQueue<DecodedFrame> frames(live ? kLiveQueue : kFileQueue, /*drop_oldest=*/live);
  BoundedQueue<AnnotatedFrame> annotated(kEncodeQueue, /*drop_oldest=*/false);
  std::atomic<bool> cancel{false};  // set by this thread when detection cannot go on
  std::atomic<long> frames_read{0};
  std::string stream_error;         // written by the decoder, read after join
  long frames_written = 0;          // written by the encoder, read after join
  bool writer_failed = false;

  // ---- decoder: read frames until the end, a stop, or a live source that cannot be reopened.
  auto decode_loop = [&] {
    int failures_in_a_row = 0;
    while (!stop_requested() && !cancel) {
      cv::Mat pixels;
      const Clock::time_point t0 = Clock::now();
      bool ok = false;
      try {
        ok = capture.read(pixels) && !pixels.empty();
      } catch (const cv::Exception&) {
        ok = false;
      }
      const double decode_ms = seconds_since(t0) * 1000;
      if (ok) {
        failures_in_a_row = 0;
        DecodedFrame frame;
        frame.index = frames_read++;
        frame.pixels = std::move(pixels);
        frame.detect = frame.index % opt.vid_stride == 0;
        frame.decode_ms = decode_ms;
        if (!frames.push(std::move(frame))) return;  // the detector side gave up
        continue;
      }
      if (!live) return;  // end of the file
      if (failures_in_a_row == kReopenTries) {
        stream_error = "stream lost and could not be reopened after " + std::to_string(kReopenTries) + " tries";
        return;
      }
      ++failures_in_a_row;
      const double pause = kFirstReopenPause * std::pow(2.0, failures_in_a_row - 1);
      ctx.console.warning(source + ": stream lost, reopening in " + format_ms(pause) + " s (try " +
                          std::to_string(failures_in_a_row) + "/" + std::to_string(kReopenTries) + ")");
      for (double waited = 0; waited < pause && !stop_requested() && !cancel; waited += 0.1)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      capture.release();
      open_capture(capture, input);  // a failed open shows up as a failed read on the next turn
    }
  };

  // ---- encoder: draw and write every frame it gets, in order.
  auto encode_loop = [&] {
    cv::VideoWriter writer;
    cv::Size size;
    AnnotatedFrame frame;
    while (annotated.pop(frame)) {
      if (!writer.isOpened() && !writer_failed) {
        size = frame.pixels.size();
        try {
          writer.open(video_path, cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, size);
        } catch (const cv::Exception&) {
        }
        writer_failed = !writer.isOpened();
        if (writer_failed) ctx.console.warning(video_path + ": cannot create the video file; not saving it");
      }
      if (writer_failed) continue;
      draw_detections(frame.pixels, frame.detections, names);
      if (frame.pixels.size() != size) cv::resize(frame.pixels, frame.pixels, size);  // a reopened stream
      writer.write(frame.pixels);
      ++frames_written;
    }
    writer.release();  // writes the file's index: the video is complete and playable
  };

  // ---- detector (this thread): detect, report, hand frames to the encoder.
  const std::string label = kind + " " + std::to_string(number) + "/" + std::to_string(total);
  const Clock::time_point start = Clock::now();
  Clock::time_point last_progress;
  yolo12::Result latest;  // the detections drawn on frames skipped by --vid-stride
  long frames_done = 0, frames_detected = 0;
  DecodedFrame frame;
  auto detect_loop = [&] {
    while (frames.pop(frame)) {
      if (frame.detect) {
        latest = ctx.detector.detect(view_of(frame.pixels));
        ++frames_detected;
        ctx.count(latest);
        if (ctx.json) ctx.json->write(result_json(source, frame.index, latest, names, frame.decode_ms));
        const std::string position = "(frame " + std::to_string(frame.index + 1) +
                                     (frame_count ? "/" + std::to_string(frame_count) : std::string()) + ")";
        ctx.console.summary(label + " " + position + " " + source + ": " + std::to_string(latest.input_height) +
                            "x" + std::to_string(latest.input_width) + " " +
                            count_summary(latest.detections, names) + ", " +
                            format_ms(latest.times.inference_ms) + "ms");
        if (opt.save_txt) {
          // Label files number frames from 1, like the summary line and Ultralytics.
          const std::string path = ctx.labels_dir() + "/" + base + "_" + std::to_string(frame.index + 1) + ".txt";
          if (!write_labels(path, latest)) ctx.console.warning(path + ": cannot write the label file");
        }
      }
      ++frames_done;
      if (opt.save) annotated.push(AnnotatedFrame{std::move(frame.pixels), latest.detections});

      if (ctx.console.shows_progress() && seconds_since(last_progress) > 0.2) {
        last_progress = Clock::now();
        const double elapsed = seconds_since(start);
        const double rate = frames_done / std::max(elapsed, 1e-6);
        std::string line = source + "  " + std::to_string(frames_done) +
                           (frame_count ? "/" + std::to_string(frame_count) : std::string()) + " frames  " +
                           format_ms(rate) + " fps  ";
        if (live)
          line += std::to_string(frames.dropped()) + " dropped  " + clock_text(elapsed) + " elapsed";
        else if (frame_count > frames_done)
          line += clock_text((frame_count - frames_done) / std::max(rate, 1e-6)) + " left";
        ctx.console.progress(line);
      }
    }
  };

  // Every loop catches what it could throw (an exception escaping a std::thread ends the process),
  // and a loop that fails closes its queues so that the others never wait for it.
  std::thread decoder([&] {
    try {
      decode_loop();
    } catch (const std::exception& e) {
      stream_error = std::string("decoding failed: ") + e.what();
    }
    frames.close();
  });
  std::thread encoder;
  if (opt.save) {
    encoder = std::thread([&] {
      try {
        encode_loop();
      } catch (const std::exception& e) {
        ctx.console.warning(video_path + ": encoding failed (" + e.what() + "); the video stops at frame " +
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
    cancel = true;
    frames.close();
  }
  decoder.join();
  annotated.close();
  if (encoder.joinable()) encoder.join();
  capture.release();
  ctx.console.end_progress();

  // ---- the outcome of this source.
  const long dropped = frames.dropped();
  const double elapsed = seconds_since(start);
  std::string outcome = label + " " + source + ": ";
  if (stop_requested())
    outcome += "interrupted after " + std::to_string(frames_read) + " frames";
  else
    outcome += std::to_string(frames_read) + " frames";
  outcome += ", " + std::to_string(frames_detected) + " detected in " + format_ms(elapsed) + " s (" +
             format_ms(frames_done / std::max(elapsed, 1e-6)) + " fps)";
  if (dropped)
    ctx.console.warning(source + ": " + std::to_string(dropped) + " of " + std::to_string(frames_read) +
                        " frames dropped because detection is slower than the source");
  if (opt.save && !writer_failed) outcome += "; saved " + video_path + " (" + std::to_string(frames_written) + " frames)";
  ctx.console.info(outcome);

  if (!detect_error.empty()) {
    ctx.fail_input(source, detect_error);
  } else if (!stream_error.empty()) {
    ctx.fail_input(source, stream_error + " (after " + std::to_string(frames_read) + " frames)");
  } else if (frames_read == 0 && !stop_requested()) {
    ctx.fail_input(source, "no frame could be decoded (corrupt video, or a codec this OpenCV build lacks)");
  }
}

}  // namespace yolo12_cli
