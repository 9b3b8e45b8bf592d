// core/log.hpp - the library's logging, through spdlog where the build found it (kept private to
// the library), else plain stderr. Levels follow YOLO12_LOG_LEVEL (trace, debug, info, warn, error,
// off; default warn) so a library never chatters unless asked.
#pragma once

#include <string>

namespace yolo12::log {

enum class Level { Trace, Debug, Info, Warn, Error, Off };

Level level();
void set_level(Level level);
void write(Level level, const std::string& message);

inline void debug(const std::string& m) { write(Level::Debug, m); }
inline void info(const std::string& m) { write(Level::Info, m); }
inline void warn(const std::string& m) { write(Level::Warn, m); }

}  // namespace yolo12::log
