// yolo12/errors.hpp - the typed exceptions libyolo12 throws.
//
// Every failure the library can report is one of these; the library never calls exit() or abort()
// and never relies on assert() for runtime checks. what() is a single line meant for a user.
#pragma once

#include <stdexcept>
#include <string>

#include "yolo12/export.hpp"

namespace yolo12 {

// Base of every error thrown by libyolo12.
class YOLO12_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A model file that cannot be used: missing, truncated, corrupt, wrong version, tensors that do not
// match the architecture, or an architecture this engine does not implement. The message names the
// file, the tensor (if any), what was expected and what was found, and what to do.
class YOLO12_API ModelError : public Error {
 public:
  using Error::Error;
};

// An input that cannot be processed: an image view with a null pointer or impossible size, a tensor
// with the wrong shape. The detector stays usable.
class YOLO12_API InputError : public Error {
 public:
  using Error::Error;
};

// An option that cannot be honoured (input size not a multiple of 32, batch < 1, conf outside
// [0, 1], a device that is not there). Thrown when the Detector is constructed, before any work.
class YOLO12_API OptionError : public Error {
 public:
  using Error::Error;
};

// A CUDA runtime failure: the message carries the call, file:line, the device and the CUDA error
// string. A Detector that threw this may be unusable; destroy it and create a new one.
class YOLO12_API CudaError : public Error {
 public:
  using Error::Error;
};

}  // namespace yolo12
