// DeadlineWorker: runs one task at a time on its own thread for a caller that will not wait past a
// deadline. Reads of kernel attributes can block for ever (a driver bug, a FIFO in their place),
// and a monitor must not block with them: the caller gets "not done" at the deadline and goes on.
//
// A task that overruns keeps the worker busy; later calls are refused at once (stuckSince() says
// since when) until it returns, so a hung read never piles up threads. The task must own what it
// touches (capture by value or shared_ptr): it may finish after the caller has given up.
//
// Destruction joins an idle worker; a stuck one is detached to finish on its own. Nothing can
// interrupt a blocked read, and shutdown must not wait on it (waiting, SIGTERM would never stop
// the agent).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace torus {

class DeadlineWorker {
 public:
  using Clock = std::chrono::steady_clock;

  DeadlineWorker();
  ~DeadlineWorker();
  DeadlineWorker(const DeadlineWorker&) = delete;
  DeadlineWorker& operator=(const DeadlineWorker&) = delete;

  // Runs `task` and waits at most `deadline` for it. True when it finished in time; false when it
  // is still running, or when an earlier task still is (then `task` is not run at all).
  bool run(std::function<void()> task, Clock::duration deadline);
  // When the task that is running now started, if one is (a task past its deadline is stuck).
  std::optional<Clock::time_point> stuckSince() const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::function<void()> task;
    bool busy = false;
    bool stop = false;
    Clock::time_point startedAt;
  };
  static void loop(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;  // shared with the thread, which may outlive this object
  std::thread thread_;
};

}  // namespace torus
