// core/log.cpp - see log.hpp.
#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifdef YOLO12_HAVE_SPDLOG
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#endif

namespace yolo12::log {
namespace {

Level level_from_env() {
  const char* env = std::getenv("YOLO12_LOG_LEVEL");
  if (!env) return Level::Warn;
  static const char* names[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (int i = 0; i < 6; ++i)
    if (std::strcmp(env, names[i]) == 0) return static_cast<Level>(i);
  return Level::Warn;
}

std::atomic<int>& current() {
  static std::atomic<int> value{static_cast<int>(level_from_env())};
  return value;
}

}  // namespace

Level level() { return static_cast<Level>(current().load()); }
void set_level(Level l) { current().store(static_cast<int>(l)); }

void write(Level l, const std::string& message) {
  if (static_cast<int>(l) < current().load() || l == Level::Off) return;
#ifdef YOLO12_HAVE_SPDLOG
  static auto logger = [] {
    auto lg = spdlog::stderr_color_mt("yolo12");
    lg->set_level(spdlog::level::trace);
    lg->set_pattern("[yolo12] [%l] %v");
    return lg;
  }();
  logger->log(static_cast<spdlog::level::level_enum>(static_cast<int>(l)), "{}", message);
#else
  static const char* names[] = {"trace", "debug", "info", "warn", "error", "off"};
  std::fprintf(stderr, "[yolo12] [%s] %s\n", names[static_cast<int>(l)], message.c_str());
#endif
}

}  // namespace yolo12::log
