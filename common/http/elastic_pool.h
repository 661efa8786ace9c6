// ElasticPool: runs each queued task on an idle worker, starting a new worker (up to a maximum)
// when none is idle, and letting workers beyond the minimum exit after a quiet spell.
//
// Why not a fixed pool: an HTTP connection holds its worker for its whole life, so with
// cpp-httplib's eight fixed workers eight slow clients stopped every other request, /healthz
// included. Here a slow client holds one of many workers, and ConnectionReaper bounds how long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace torus::http {

class ElasticPool {
 public:
  struct Limits {
    std::size_t minWorkers = 2;
    std::size_t maxWorkers = 256;
    std::chrono::milliseconds idleExit{30'000};  // a worker beyond minWorkers idle this long exits
  };

  explicit ElasticPool(Limits limits);
  ~ElasticPool();  // runs what is queued, then joins every worker
  ElasticPool(const ElasticPool&) = delete;
  ElasticPool& operator=(const ElasticPool&) = delete;

  void enqueue(std::function<void()> task);
  // Runs what is queued and joins every worker; later enqueues are dropped.
  void shutdown();

 private:
  struct Worker {
    std::thread thread;
    bool exited = false;
  };
  void run(Worker& self);
  void joinExitedLocked();

  const Limits limits_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::list<Worker> workers_;  // a list: each worker keeps a reference to its own entry
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace torus::http
