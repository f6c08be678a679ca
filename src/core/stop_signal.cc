#include "core/stop_signal.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ic {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
std::atomic<int> g_signals_seen{0};
std::atomic<int> g_timeout_secs{60};
// The message of a forced exit, built before any signal (a handler must not allocate).
char g_program[128] = "";
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");
static_assert(std::atomic<int>::is_always_lock_free, "signal handler needs a lock-free count");

// Only async-signal-safe calls from here on: write(2), _exit(2), alarm(2), fcntl(2).
void write_text(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

[[noreturn]] void exit_now(int signal_number, const char* why) {
  write_text(g_program);
  write_text(why);
  write_text(": exiting at once without a checkpoint (the last one written is intact)\n");
  _exit(128 + signal_number);
}

// Output nobody reads must not keep a stopping program from its checkpoint: mpirun, when it is
// signalled, stops draining its processes' stdout (a pseudo-terminal) and stderr (a pipe), and
// a trainer that logs every step then blocks writing to a full one, never reaches its step
// boundary, and is killed by mpirun's SIGKILL a second later with no checkpoint. From the stop
// signal on, stdout and stderr do not block: a full one drops the output (the write fails with
// EAGAIN; an interrupted blocked write is restarted and fails so too). The descriptors' flags
// are put back at exit, since a terminal's are shared with the shell.
int g_output_flags[2] = {-1, -1};  // stdout's and stderr's, read when the handlers are installed

// Sets stdout's and stderr's flags to the ones read at installation plus `added`.
void set_output_flags(int added) {
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    const int flags = g_output_flags[fd - STDOUT_FILENO];
    if (flags >= 0) fcntl(fd, F_SETFL, flags | added);
  }
}

extern "C" void restore_output_blocking() { set_output_flags(0); }

extern "C" void on_stop_signal(int signal_number) {
  if (g_signals_seen.fetch_add(1, std::memory_order_relaxed) > 0) {
    exit_now(signal_number, "a second stop signal");
  }
  set_output_flags(O_NONBLOCK);
  g_signal.store(signal_number, std::memory_order_relaxed);
  g_stop.store(true, std::memory_order_relaxed);
  const int timeout = g_timeout_secs.load(std::memory_order_relaxed);
  if (timeout > 0) alarm(static_cast<unsigned>(timeout));
}

extern "C" void on_stop_timeout(int) {
  const int signal_number = g_signal.load(std::memory_order_relaxed);
  exit_now(signal_number > 0 ? signal_number : SIGALRM,
           "no step boundary came within --stop_timeout_secs of the stop signal");
}

}  // namespace

void install_stop_signal_handlers(const char* program, int timeout_secs) {
  std::string prefix = program != nullptr ? program : "";
  if (!prefix.empty()) prefix += ": ";
  std::strncpy(g_program, prefix.c_str(), sizeof(g_program) - 1);
  g_timeout_secs.store(timeout_secs, std::memory_order_relaxed);
  if (g_output_flags[0] < 0 && g_output_flags[1] < 0) {
    g_output_flags[0] = fcntl(STDOUT_FILENO, F_GETFL);
    g_output_flags[1] = fcntl(STDERR_FILENO, F_GETFL);
    std::atexit(restore_output_blocking);
  }
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  struct sigaction timeout = {};
  timeout.sa_handler = on_stop_timeout;
  sigemptyset(&timeout.sa_mask);
  timeout.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &timeout, nullptr);
}

bool stop_requested() { return g_stop.load(std::memory_order_relaxed); }
void acknowledge_stop() {
  if (g_signal.load(std::memory_order_relaxed) != 0) alarm(0);
}
void request_stop() { g_stop.store(true, std::memory_order_relaxed); }
void clear_stop_request() {
  g_stop.store(false, std::memory_order_relaxed);
  g_signal.store(0, std::memory_order_relaxed);
  g_signals_seen.store(0, std::memory_order_relaxed);
}
int stop_signal_number() { return g_signal.load(std::memory_order_relaxed); }

}  // namespace ic
