// ShutdownSignal: turns SIGTERM/SIGINT into an orderly stop.
//
// Construct it in main() before any thread starts: it blocks both signals for the process, so
// no worker thread is interrupted, and wait() receives them synchronously (sigwait), after which
// main() tears things down in order. A second signal during teardown is left blocked.
#pragma once

#include <chrono>
#include <optional>

namespace torus {

class ShutdownSignal {
 public:
  ShutdownSignal();
  ShutdownSignal(const ShutdownSignal&) = delete;
  ShutdownSignal& operator=(const ShutdownSignal&) = delete;

  // Blocks until SIGTERM or SIGINT arrives; returns the signal number.
  int wait();
  // As wait(), but gives up after `timeout` and returns nullopt.
  std::optional<int> waitFor(std::chrono::milliseconds timeout);
};

}  // namespace torus
