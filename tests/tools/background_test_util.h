// A program the test starts in the background, its stdout and stderr in a log file, for tests
// that signal a running trainer or wait for what it logs. Killed (SIGKILL) and reaped at the
// end of the test unless the test reaped it first.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tools/tool_runner.h"

namespace ic::testing {

class Background {
 public:
  // build/bin's `program` with `args` split at white space (no shell).
  Background(const std::string& program, const std::string& args, const std::string& log)
      : log_(log) {
    std::vector<std::string> argv = {bin_path(program)};
    std::istringstream flags(args);
    for (std::string flag; flags >> flag;) argv.push_back(flag);
    start(std::move(argv));
  }

  // `command_line` run by /bin/sh, for a command that needs a shell (environment assignments,
  // mpirun). Begin it with `exec` (after any assignments) so that the pid, and the signals sent
  // to it, are the command's own rather than the shell's.
  static Background shell(const std::string& command_line, const std::string& log) {
    return Background({"/bin/sh", "-c", command_line}, log);
  }

  Background(Background&& other) noexcept
      : log_(std::move(other.log_)), pid_(std::exchange(other.pid_, -1)), reaped_(other.reaped_) {}
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  Background& operator=(Background&&) = delete;

  ~Background() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }

  // Everything it has written so far.
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // Whether `text` appeared in the log within `seconds`, looking every `poll`; false as soon as
  // the program has ended without writing it.
  bool wait_for(const std::string& text, int seconds,
                std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (log().find(text) == std::string::npos) {
      // It may have written the text just before it ended: read the log once more.
      if (has_ended()) return log().find(text) != std::string::npos;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(poll);
    }
    return true;
  }

  // The wait status, or -1 when it has not exited within `seconds`.
  int wait_exit(double seconds) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    while (!reaped_ && std::chrono::steady_clock::now() < deadline) {
      if (!has_ended()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return reaped_ ? status_ : -1;
  }

 private:
  Background(std::vector<std::string> argv, const std::string& log) : log_(log) {
    start(std::move(argv));
  }

  void start(std::vector<std::string> argv_text) {
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (std::string& a : argv_text) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }

  // Reaps it if it has exited (without waiting).
  bool has_ended() {
    if (reaped_) return true;
    if (pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }

  std::string log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace ic::testing
