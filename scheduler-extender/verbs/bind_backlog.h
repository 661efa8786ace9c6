// BindBacklog: the binds waiting on the API server, and the wait that keeps them few.
//
// kube-scheduler hands a pod to its binding cycle and goes on to the next pod at once. When its
// scheduling cycle is cheaper than the API server's Binding (the extender chooses in filter, and
// the API server shares its CPUs), binds pile up: on 1,200 kwok nodes 200 were in flight, taking
// over a second each, and some ran past kube-scheduler's extender timeout (5 s in the chart);
// kube-scheduler then scheduled the pod again while its Binding still landed. So filter for the
// next pod waits, for at most `maxWait`, while `inFlight` binds are outstanding: pods are then
// scheduled about as fast as they are bound, and a bind waits only for its own Binding.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace torus::extender {

class BindBacklog {
 public:
  struct Limits {
    std::size_t inFlight = 64;  // the kept API connections of the binder (kube/api_binder.cc)
    std::chrono::milliseconds maxWait{2000};
  };
  BindBacklog() : BindBacklog(Limits{}) {}
  explicit BindBacklog(Limits limits) : limits_(limits) {}

  // One bind in flight for as long as the Entry lives.
  class Entry {
   public:
    explicit Entry(BindBacklog& backlog) : backlog_(&backlog) { backlog_->arrive(); }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry() { backlog_->leave(); }

   private:
    BindBacklog* backlog_;
  };
  [[nodiscard]] Entry enter() { return Entry(*this); }

  // Waits while `inFlight` binds are outstanding, for at most `maxWait`; returns how long.
  std::chrono::steady_clock::duration waitForRoom();

  std::size_t inFlight() const;
  // Filters that waited, and their time waiting in all (for /metrics).
  std::uint64_t waits() const;
  double secondsWaited() const;

 private:
  void arrive();
  void leave();

  const Limits limits_;
  mutable std::mutex mutex_;
  std::condition_variable roomMade_;
  std::size_t inFlight_ = 0;
  std::uint64_t waits_ = 0;
  double secondsWaited_ = 0;
};

}  // namespace torus::extender
