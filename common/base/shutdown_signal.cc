#include "common/base/shutdown_signal.h"

#include <cerrno>
#include <ctime>

#include <pthread.h>
#include <signal.h>

namespace torus {
namespace {

sigset_t shutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

ShutdownSignal::ShutdownSignal() {
  const sigset_t set = shutdownSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int ShutdownSignal::wait() {
  const sigset_t set = shutdownSignals();
  int signal = 0;
  while (sigwait(&set, &signal) != 0) {
  }
  return signal;
}

std::optional<int> ShutdownSignal::waitFor(std::chrono::milliseconds timeout) {
  const sigset_t set = shutdownSignals();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  timespec limit{static_cast<time_t>(seconds.count()),
                 static_cast<long>((timeout - seconds).count() * 1'000'000)};
  while (true) {
    const int signal = sigtimedwait(&set, nullptr, &limit);
    if (signal > 0) return signal;
    if (errno != EINTR) return std::nullopt;
  }
}

}  // namespace torus
