// cli/stderr_capture.hpp - what the image decoders print.
//
// libjpeg reports a corrupt JPEG ("Corrupt JPEG data: premature end of data segment") and libpng
// its complaints ("libpng warning: iCCP: known incorrect sRGB profile") by writing to stderr
// themselves, and OpenCV gives no way to hear them. capture_stderr() points file descriptor 2 at a
// memory file while fn runs and returns what was written, so the CLI can turn a corrupt JPEG into
// its own warning and keep libpng's chatter for --verbose. Only for code on the main thread while
// no other thread of ours writes to stderr (still images are decoded there, before their batch).
#pragma once

#include <functional>
#include <string>

namespace yolo12_cli {

// Runs fn with stderr captured; returns the captured text (at most 64 KiB). Exceptions from fn
// pass through after stderr is restored.
std::string capture_stderr(const std::function<void()>& fn);

}  // namespace yolo12_cli
