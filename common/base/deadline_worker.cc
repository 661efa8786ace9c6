#include "common/base/deadline_worker.h"

#include <utility>

namespace torus {

DeadlineWorker::DeadlineWorker() : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_] { loop(state); });
}

DeadlineWorker::~DeadlineWorker() {
  bool stuck = false;
  {
    std::lock_guard lock(state_->mutex);
    state_->stop = true;
    stuck = state_->busy;
  }
  state_->wake.notify_all();
  if (stuck) {
    thread_.detach();  // it holds its own reference to the state and ends when the read returns
  } else {
    thread_.join();
  }
}

bool DeadlineWorker::run(std::function<void()> task, Clock::duration deadline) {
  std::unique_lock lock(state_->mutex);
  if (state_->busy) return false;
  state_->task = std::move(task);
  state_->busy = true;
  state_->startedAt = Clock::now();
  state_->wake.notify_all();
  return state_->wake.wait_for(lock, deadline, [&] { return !state_->busy; });
}

std::optional<DeadlineWorker::Clock::time_point> DeadlineWorker::stuckSince() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->busy) return std::nullopt;
  return state_->startedAt;
}

void DeadlineWorker::loop(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mutex);
  while (true) {
    state->wake.wait(lock, [&] { return state->stop || (state->busy && state->task); });
    if (state->stop && !(state->busy && state->task)) return;
    std::function<void()> task = std::move(state->task);
    state->task = nullptr;
    lock.unlock();
    task();
    lock.lock();
    state->busy = false;
    state->wake.notify_all();
    if (state->stop) return;
  }
}

}  // namespace torus
