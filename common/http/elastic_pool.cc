#include "common/http/elastic_pool.h"

#include <algorithm>
#include <utility>

namespace torus::http {

ElasticPool::ElasticPool(Limits limits) : limits_(limits) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < limits_.minWorkers; ++i) {
    Worker& worker = workers_.emplace_back();
    worker.thread = std::thread([this, &worker] { run(worker); });
  }
}

ElasticPool::~ElasticPool() {
  shutdown();
}

void ElasticPool::enqueue(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  joinExitedLocked();
  tasks_.push_back(std::move(task));
  // Only start a worker when the queue outgrows the idle ones: a burst of accepts must not start
  // a thread each while idle workers are still waking up.
  if (tasks_.size() > idle_ && workers_.size() < std::max<std::size_t>(limits_.maxWorkers, 1)) {
    Worker& worker = workers_.emplace_back();
    worker.thread = std::thread([this, &worker] { run(worker); });
  }
  wake_.notify_one();
}

void ElasticPool::shutdown() {
  std::list<Worker> workers;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    workers.swap(workers_);
  }
  wake_.notify_all();
  for (Worker& worker : workers) {
    if (worker.thread.joinable()) worker.thread.join();
  }
}

void ElasticPool::run(Worker& self) {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    const bool woke =
        wake_.wait_for(lock, limits_.idleExit, [this] { return !tasks_.empty() || stopping_; });
    --idle_;
    if (!woke) {
      // Quiet for idleExit: leave if the pool is above its floor. The entry stays until the next
      // enqueue joins it (a thread cannot join itself). After shutdown() took the list, `self`
      // belongs to shutdown's copy and is only read by it after this thread ends.
      const auto alive = std::count_if(workers_.begin(), workers_.end(),
                                       [](const Worker& worker) { return !worker.exited; });
      if (!stopping_ && static_cast<std::size_t>(alive) > limits_.minWorkers) {
        self.exited = true;
        return;
      }
      continue;
    }
    if (tasks_.empty()) return;  // stopping, nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

void ElasticPool::joinExitedLocked() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->exited) {
      it->thread.join();  // it has returned from run(); the join does not wait on the lock
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace torus::http
