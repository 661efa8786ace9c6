#include "common/base/change_notifier.h"

#include <vector>

namespace torus {

ChangeNotifier::ChangeNotifier() : state_(std::make_shared<NotifierState>()) {}

ChangeNotifier::Subscription ChangeNotifier::subscribe(std::function<void()> callback) {
  std::lock_guard lock(state_->mutex);
  const std::uint64_t id = state_->nextId++;
  state_->callbacks.emplace(id, std::move(callback));
  return Subscription(state_, id);
}

void ChangeNotifier::notify() {
  std::vector<std::pair<std::uint64_t, std::function<void()>>> calls;
  {
    std::lock_guard lock(state_->mutex);
    for (const auto& [id, callback] : state_->callbacks) {
      calls.emplace_back(id, callback);
      ++state_->running[id];
    }
  }
  for (auto& [id, callback] : calls) {
    callback();
    std::lock_guard lock(state_->mutex);
    if (--state_->running[id] == 0) state_->running.erase(id);
    state_->idle.notify_all();
  }
}

ChangeNotifier::Subscription::Subscription(std::shared_ptr<NotifierState> state, std::uint64_t id)
    : state_(std::move(state)), id_(id) {}

ChangeNotifier::Subscription::Subscription(Subscription&& other) noexcept
    : state_(std::move(other.state_)), id_(other.id_) {}

ChangeNotifier::Subscription& ChangeNotifier::Subscription::operator=(
    Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    state_ = std::move(other.state_);
    id_ = other.id_;
  }
  return *this;
}

ChangeNotifier::Subscription::~Subscription() {
  reset();
}

void ChangeNotifier::Subscription::reset() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  state_->callbacks.erase(id_);
  state_->idle.wait(lock, [&] { return state_->running.count(id_) == 0; });
  lock.unlock();
  state_.reset();
}

}  // namespace torus
