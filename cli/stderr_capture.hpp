// cli/stderr_capture.hpp - what the image decoders print.
//
// libjpeg reports a corrupt JPEG ("Corrupt JPEG data: premature end of data segment") and libpng
// its complaints ("libpng warning: iCCP: known incorrect sRGB profile") by writing to stderr
// themselves, and OpenCV gives no way to hear them. capture_stderr() points file descriptor 2 at a
// memory file while fn runs and returns what was written, so the CLI can turn a corrupt JPEG into
// its own warning and keep libpng's chatter for --verbose. Descriptor 2 belongs to the whole process,
// so captures hold stderr_mutex(): one at a time (the image workers decode one image at a time,
// reading files and detecting in parallel), and every other writer to stderr of ours (the Console)
// takes it too, so that its lines are neither swallowed nor taken for a decoder's.
#pragma once

#include <functional>
#include <mutex>
#include <string>

namespace yolo12_cli {

// Held while stderr is captured; take it to write to stderr while other threads may capture.
inline std::mutex& stderr_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Runs fn with stderr captured; returns the captured text (at most 64 KiB). Exceptions from fn
// pass through after stderr is restored.
std::string capture_stderr(const std::function<void()>& fn);

}  // namespace yolo12_cli
