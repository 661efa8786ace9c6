#include "node-runtime/collectives/async_worker.h"

namespace torus::coll {

Result<void> Request::wait() {
  if (!state_) return makeError(ErrorCode::kFailedPrecondition, "wait on an empty request");
  std::unique_lock lock(state_->mutex);
  state_->done.wait(lock, [this] { return state_->result.has_value(); });
  return *state_->result;
}

std::optional<Result<void>> Request::test() {
  if (!state_) return Result<void>(makeError(ErrorCode::kFailedPrecondition, "empty request"));
  std::lock_guard lock(state_->mutex);
  return state_->result;
}

AsyncWorker::AsyncWorker() : thread_([this](std::stop_token stop) { run(stop); }) {}

AsyncWorker::~AsyncWorker() {
  thread_.request_stop();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (Task& task : queue_) {
    complete(*task.state, makeError(ErrorCode::kAborted,
                                    "the communicator was destroyed before this operation ran"));
  }
}

Request AsyncWorker::post(std::function<Result<void>()> operation) {
  auto state = std::make_shared<RequestState>();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Task{std::move(operation), state});
    ++outstanding_;
  }
  wake_.notify_one();
  return Request(std::move(state));
}

int AsyncWorker::outstanding() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

void AsyncWorker::complete(RequestState& state, Result<void> result) {
  {
    std::lock_guard lock(state.mutex);
    state.result = std::move(result);
  }
  state.done.notify_all();
}

void AsyncWorker::run(std::stop_token stop) {
  while (true) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      if (!wake_.wait(lock, stop, [this] { return !queue_.empty(); })) return;  // stopping
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    Result<void> result = task.operation();
    {
      std::lock_guard lock(mutex_);
      --outstanding_;
    }
    complete(*task.state, std::move(result));
  }
}

}  // namespace torus::coll
