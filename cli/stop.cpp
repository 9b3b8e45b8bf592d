// cli/stop.cpp - SIGINT/SIGTERM handling: ask the pipelines to stop, then drain.
//
// The handler only sets a flag (and writes one line with write(2), which is async-signal-safe, to
// the stderr of the start: image decoding points descriptor 2 elsewhere for a moment); the
// pipelines poll stop_requested() between frames and while they wait, finish what is in flight,
// release their video writers and flush the JSON, so every file written so far is complete. A
// second signal while draining ends the process at once.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "run.hpp"

namespace yolo12_cli {
namespace {

std::atomic<bool> g_stop{false};
int g_stderr = STDERR_FILENO;

void on_stop_signal(int) {
  if (g_stop.exchange(true)) _exit(kExitInterrupted);  // second signal: quit now
  const char message[] = "\nstopping: finishing the frames in flight (signal again to quit at once)\n";
  ssize_t ignored = write(g_stderr, message, sizeof message - 1);
  (void)ignored;
}

}  // namespace

void install_stop_handlers() {
  const int copy = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (copy >= 0) g_stderr = copy;
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESTART;  // reads and writes in progress resume instead of failing with EINTR
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_stop.load(); }

}  // namespace yolo12_cli
