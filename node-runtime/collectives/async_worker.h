// Asynchronous collectives: a Request handle (wait / test) and the worker thread that runs a
// communicator's asynchronous operations one after another, in the order they were posted.
//
// Owns: the worker thread (std::jthread, stopped and joined on destruction) and the queue.
// Operations still queued when the worker is destroyed complete with kAborted. Does not own
// the communicator; the communicator owns its worker and destroys it first.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/base/result.h"

namespace torus::coll {

struct RequestState {
  std::mutex mutex;
  std::condition_variable done;
  std::optional<Result<void>> result;
};

class Request {
 public:
  Request() = default;
  explicit Request(std::shared_ptr<RequestState> state) : state_(std::move(state)) {}

  // Blocks until the operation finished; bounded, since the operation's waits are.
  Result<void> wait();
  // The result once finished, nullopt while it runs or waits its turn.
  std::optional<Result<void>> test();

 private:
  std::shared_ptr<RequestState> state_;
};

class AsyncWorker {
 public:
  AsyncWorker();
  AsyncWorker(const AsyncWorker&) = delete;
  AsyncWorker& operator=(const AsyncWorker&) = delete;
  ~AsyncWorker();

  Request post(std::function<Result<void>()> operation);
  std::thread::id threadId() const { return thread_.get_id(); }
  // Posted operations not finished yet.
  int outstanding() const;

 private:
  struct Task {
    std::function<Result<void>()> operation;
    std::shared_ptr<RequestState> state;
  };
  void run(std::stop_token stop);
  static void complete(RequestState& state, Result<void> result);

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<Task> queue_;
  int outstanding_ = 0;
  std::jthread thread_;  // last: starts after the queue exists, stops before it goes
};

}  // namespace torus::coll
