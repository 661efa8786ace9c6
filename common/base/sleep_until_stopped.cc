#include "common/base/sleep_until_stopped.h"

#include <condition_variable>
#include <mutex>

namespace torus {

bool sleepUntilStopped(std::stop_token stop, std::chrono::steady_clock::duration duration) {
  // Nothing notifies this condition variable: only the stop callback that wait_for registers on
  // `stop` wakes it early, and the always-false predicate keeps spurious wake-ups asleep.
  std::mutex mutex;
  std::condition_variable_any wake;
  std::unique_lock lock(mutex);
  wake.wait_for(lock, stop, duration, [] { return false; });
  return stop.stop_requested();
}

}  // namespace torus
