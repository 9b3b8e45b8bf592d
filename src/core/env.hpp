// src/core/env.hpp - the library's settings read from environment variables, parsed one way everywhere: an on/off
// switch and a bounded count. A value that is not one of them is an OptionError that names the variable, never a
// silent default. Callers read them when an executor is made (or a process-wide object first used), not per inference.
#pragma once

#include <cstdlib>
#include <string>

#include "yolo12/errors.hpp"

namespace yolo12 {

// An on/off variable (YOLO12_CONV_TUNE, YOLO12_STAGING_HALVES, ...): "1" on; "0" off; empty or unset `unset`.
inline bool env_switch(const char* name, bool unset = false) {
  const char* env = std::getenv(name);
  if (!env || !*env) return unset;
  if (std::string(env) == "0") return false;
  if (std::string(env) == "1") return true;
  throw OptionError(std::string(name) + " must be 0 or 1, got '" + env + "'");
}

// A count (YOLO12_STAGING_SPIN_US, YOLO12_CPU_SPIN_US): decimal digits only, at most `max`; empty or unset `unset`.
inline long env_count(const char* name, long unset, long max) {
  const char* env = std::getenv(name);
  if (!env || !*env) return unset;
  long v = 0;
  for (const char* c = env; *c; ++c) {
    if (*c < '0' || *c > '9' || v > max) {
      v = -1;
      break;
    }
    v = v * 10 + (*c - '0');
  }
  if (v < 0 || v > max)
    throw OptionError(std::string(name) + " must be a whole number from 0 to " + std::to_string(max) + ", got '" +
                      env + "'");
  return v;
}

}  // namespace yolo12
