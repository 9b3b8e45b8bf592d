// cli/stderr_capture.cpp - see stderr_capture.hpp.
#include "stderr_capture.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

namespace yolo12_cli {

std::string capture_stderr(const std::function<void()>& fn) {
  std::lock_guard<std::mutex> lock(stderr_mutex());
  std::fflush(stderr);
  const int memory = memfd_create("yolo12-stderr", MFD_CLOEXEC);
  const int saved = memory < 0 ? -1 : dup(STDERR_FILENO);
  if (memory < 0 || saved < 0 || dup2(memory, STDERR_FILENO) < 0) {  // cannot capture: run as is
    if (saved >= 0) close(saved);
    if (memory >= 0) close(memory);
    fn();
    return "";
  }
  // Restores stderr and closes both descriptors however fn ends.
  struct Capture {
    int memory, saved;
    ~Capture() {
      std::fflush(stderr);
      dup2(saved, STDERR_FILENO);
      close(saved);
      close(memory);
    }
  } capture{memory, saved};
  fn();
  std::fflush(stderr);
  std::string text(64 * 1024, '\0');
  const ssize_t n = pread(memory, &text[0], text.size(), 0);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return text;
}

}  // namespace yolo12_cli
