// cli/ffmpeg.cpp - see ffmpeg.hpp.
#include "ffmpeg.hpp"

#include <chrono>
#include <cstdarg>
#include <memory>
#include <mutex>

#ifdef YOLO12_CLI_HAVE_FFMPEG
extern "C" {
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}
#endif

namespace yolo12_cli {

#ifdef YOLO12_CLI_HAVE_FFMPEG
namespace {

std::mutex g_sink_mutex;
std::function<void(const std::string&)> g_sink;

void log_callback(void* object, int level, const char* format, va_list args) {
  if (level > AV_LOG_WARNING) return;  // info, verbose, debug: never wanted here
  char line[1024];
  int print_prefix = 1;
  av_log_format_line2(object, level, format, args, line, sizeof line, &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return;
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  if (g_sink) g_sink("ffmpeg: " + text);
}

struct Interrupt {
  std::chrono::steady_clock::time_point deadline;
  const std::function<bool()>* stop;
};

int interrupt_callback(void* opaque) {
  const auto* in = static_cast<const Interrupt*>(opaque);
  return (std::chrono::steady_clock::now() > in->deadline || (*in->stop && (*in->stop)())) ? 1 : 0;
}

std::string av_error(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

}  // namespace

void route_ffmpeg_log(std::function<void(const std::string&)> sink) {
  {
    std::lock_guard<std::mutex> lock(g_sink_mutex);
    g_sink = std::move(sink);
  }
  av_log_set_callback(log_callback);
}

bool fetch_url(const std::string& url, std::size_t max_bytes, double timeout_s, const std::function<bool()>& stop,
               std::vector<unsigned char>* bytes, std::string* error) {
  using Clock = std::chrono::steady_clock;
  static std::once_flag network;
  std::call_once(network, [] { avformat_network_init(); });
  const auto window = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Interrupt state{Clock::now() + window, &stop};
  AVIOInterruptCB callback{interrupt_callback, &state};
  AVDictionary* options = nullptr;
  av_dict_set_int(&options, "rw_timeout", static_cast<int64_t>(timeout_s * 1e6), 0);  // microseconds
  AVIOContext* io = nullptr;
  const int opened = avio_open2(&io, url.c_str(), AVIO_FLAG_READ, &callback, &options);
  av_dict_free(&options);
  const auto why = [&](int code) {
    if (stop && stop()) return std::string("interrupted");
    if (Clock::now() > state.deadline) return "nothing received for " + std::to_string(static_cast<int>(timeout_s)) + " s";
    return av_error(code);
  };
  if (opened < 0) {
    *error = "cannot download the image (" + why(opened) + ")";
    return false;
  }
  std::unique_ptr<AVIOContext, void (*)(AVIOContext*)> guard(io, [](AVIOContext* c) { avio_closep(&c); });
  const int64_t size = avio_size(io);
  if (size > 0 && static_cast<uint64_t>(size) > max_bytes) {
    *error = "the image is " + std::to_string(size) + " bytes, more than the limit of " + std::to_string(max_bytes);
    return false;
  }
  bytes->clear();
  unsigned char chunk[64 * 1024];
  for (;;) {
    const int n = avio_read(io, chunk, sizeof chunk);
    if (n == AVERROR_EOF) break;
    if (n < 0) {
      *error = "download failed after " + std::to_string(bytes->size()) + " bytes (" + why(n) + ")";
      return false;
    }
    bytes->insert(bytes->end(), chunk, chunk + n);
    if (bytes->size() > max_bytes) {
      *error = "the image is larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return false;
    }
    state.deadline = Clock::now() + window;  // the timeout is per wait, not for the whole download
  }
  return true;
}

#else  // no FFmpeg at build time

void route_ffmpeg_log(std::function<void(const std::string&)>) {}

bool fetch_url(const std::string&, std::size_t, double, const std::function<bool()>&, std::vector<unsigned char>*,
               std::string* error) {
  *error = "image URLs need FFmpeg, which this yolo12-infer was built without";
  return false;
}

#endif

}  // namespace yolo12_cli
