// ChangeNotifier: a list of callbacks to run when something changes, with RAII subscriptions.
//
// notify() runs the callbacks outside the lock that guards the list, so a callback may take its
// own locks; a Subscription's destructor waits until no call into its callback is running, so
// the subscriber may destroy what the callback touches right after.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace torus {

class ChangeNotifier {
 public:
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();

   private:
    friend class ChangeNotifier;
    Subscription(std::shared_ptr<struct NotifierState> state, std::uint64_t id);
    void reset();
    std::shared_ptr<struct NotifierState> state_;
    std::uint64_t id_ = 0;
  };

  ChangeNotifier();
  Subscription subscribe(std::function<void()> callback);
  void notify();

 private:
  std::shared_ptr<struct NotifierState> state_;
};

struct NotifierState {
  std::mutex mutex;
  std::condition_variable idle;
  std::map<std::uint64_t, std::function<void()>> callbacks;
  std::map<std::uint64_t, int> running;  // calls in progress per subscription
  std::uint64_t nextId = 1;
};

}  // namespace torus
