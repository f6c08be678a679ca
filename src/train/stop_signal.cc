#include "train/stop_signal.h"

#include <atomic>
#include <csignal>

namespace ic {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int signal_number) {
  g_signal.store(signal_number, std::memory_order_relaxed);
  g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_stop.load(std::memory_order_relaxed); }
void request_stop() { g_stop.store(true, std::memory_order_relaxed); }
void clear_stop_request() {
  g_stop.store(false, std::memory_order_relaxed);
  g_signal.store(0, std::memory_order_relaxed);
}
int stop_signal_number() { return g_signal.load(std::memory_order_relaxed); }

}  // namespace ic
