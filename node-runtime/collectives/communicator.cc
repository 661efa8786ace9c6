// The Communicator's operations: every collective through run() on the chosen group, point to
// point with per-pair message numbers, async operations, and breaking on failure.
#include "node-runtime/collectives/communicator.h"

#include <algorithm>
#include <limits>
#include <thread>

#include "common/base/log.h"

namespace torus::coll {

Error Communicator::fail(Error error) {
  if (broken_) return error;
  // A transport error (a send to a rank that died because another did) names the messenger;
  // the rank whose bootstrap connection closed first is the cause, and a user reading the error
  // should see it.
  if (auto trouble = groups_->remoteTrouble();
      trouble && error.message.find(*trouble) == std::string::npos) {
    error.message += " (" + *trouble + ")";
  }
  broken_ = error;
  if (status_) {
    std::lock_guard lock(status_->mutex);
    status_->brokenBy = error.message;
  }
  TORUS_LOG(Error, Coll, "communicator broken", {"comm", name_}, {"rank", rank_},
            {"error", error.message});
  groups_->abort(error.message);  // hostmates and other hosts learn of it
  return error;
}

Result<void> Communicator::checkCaller(std::string_view call) const {
  if (!worker_ || std::this_thread::get_id() == worker_->threadId()) return okResult();
  if (const int pending = worker_->outstanding(); pending > 0) {
    return makeError(ErrorCode::kFailedPrecondition,
                     std::string(call) + " on " + name_ + " while " + std::to_string(pending) +
                         " asynchronous operations are pending: wait for them first");
  }
  return okResult();
}

Result<void> Communicator::checkRoot(std::string_view call, int root) const {
  if (root >= 0 && root < size_) return okResult();
  return makeError(
      ErrorCode::kInvalidArgument,
      std::string(call) + ": root " + std::to_string(root) + " is not a rank of " + name_);
}

Result<void> Communicator::run(OpKind op, FunctionRef<Result<void>(const GroupCall&)> body) {
  TORUS_RETURN_IF_ERROR(checkCaller(opName(op)), "refused");
  const std::uint64_t sequence = sequence_ + 1;
  // Messages are built only when something fails: the fast path allocates nothing.
  const auto what = [&] {
    return std::string(opName(op)) + " seq=" + std::to_string(sequence) + " on " + name_ +
           " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
  };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  sequence_ = sequence;
  const InFlightMark inFlight(status_.get(), waitPublished_, op, sequence);
  // Only libfabric waits against the whole call's deadline; shared-memory waits bound themselves
  // (each by the timeout), so a host's small collective does not pay for reading the clock.
  const Deadline deadline = groups_->overNetwork() ? Clock::now() + timeout_ : Deadline::max();
  const GroupCall call{sequence, deadline, timeout_, what};
  if (auto status = body(call); !status) return fail(std::move(status).error());
  return okResult();
}

Result<void> Communicator::allReduce(const void* send, void* recv, std::size_t count, DataType type,
                                     ReduceOp op) {
  return run(OpKind::kAllReduce, [&](const GroupCall& call) {
    return groups_->run().allReduce(call, send, recv, count, type, op);
  });
}

Result<void> Communicator::allGather(const void* send, void* recv, std::size_t sendCount,
                                     DataType type) {
  return run(OpKind::kAllGather, [&](const GroupCall& call) {
    return groups_->run().allGather(call, send, recv, sendCount, type);
  });
}

Result<void> Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount,
                                         DataType type, ReduceOp op) {
  return run(OpKind::kReduceScatter, [&](const GroupCall& call) {
    return groups_->run().reduceScatter(call, send, recv, recvCount, type, op);
  });
}

Result<void> Communicator::allToAll(const void* send, void* recv, std::size_t countPerRank,
                                    DataType type) {
  return run(OpKind::kAllToAll, [&](const GroupCall& call) {
    return groups_->run().allToAll(call, send, recv, countPerRank, type);
  });
}

Result<void> Communicator::broadcast(const void* send, void* recv, std::size_t count, DataType type,
                                     int root) {
  if (auto valid = checkRoot("broadcast", root); !valid) return valid;
  return run(OpKind::kBroadcast, [&](const GroupCall& call) {
    return groups_->run().broadcast(call, send, recv, count, type, root);
  });
}

Result<void> Communicator::reduce(const void* send, void* recv, std::size_t count, DataType type,
                                  ReduceOp op, int root) {
  if (auto valid = checkRoot("reduce", root); !valid) return valid;
  return run(OpKind::kReduce, [&](const GroupCall& call) {
    return groups_->run().reduce(call, send, recv, count, type, op, root);
  });
}

Result<void> Communicator::barrier() {
  return run(OpKind::kBarrier, [&](const GroupCall& call) { return groups_->run().barrier(call); });
}

// Send, Recv and Permute in one; messages are numbered per pair, so they need no sequence number.
Result<void> Communicator::pointToPoint(OpKind kind, const void* send, void* recv,
                                        std::size_t count, DataType type, int sendTo,
                                        int recvFrom) {
  TORUS_RETURN_IF_ERROR(checkCaller(opName(kind)), "refused");
  const std::size_t bytes = count * dataTypeSize(type);
  const auto valid = [&](int peer) { return peer >= 0 && peer < size_ && peer != rank_; };
  const auto next = [](const std::vector<std::uint64_t>& counts, int peer) {
    return peer >= 0 && static_cast<std::size_t>(peer) < counts.size()
               ? counts[static_cast<std::size_t>(peer)] + 1
               : 0;
  };
  const std::uint64_t sendMessage = next(sent_, sendTo);
  const std::uint64_t recvMessage = next(received_, recvFrom);
  const auto what = [&] {
    std::string text(opName(kind));
    if (sendTo >= 0)
      text += " to rank " + std::to_string(sendTo) + " msg=" + std::to_string(sendMessage);
    if (sendTo >= 0 && recvFrom >= 0) text += ",";
    if (recvFrom >= 0) {
      text += " from rank " + std::to_string(recvFrom) + " msg=" + std::to_string(recvMessage);
    }
    return text + " on " + name_ + " (rank " + std::to_string(rank_) + ")";
  };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  if ((sendTo != -1 && !valid(sendTo)) || (recvFrom != -1 && !valid(recvFrom))) {
    return makeError(ErrorCode::kInvalidArgument, what() + ": a peer must be another rank in [0, " +
                                                      std::to_string(size_) + ") or -1 (none)");
  }
  if (bytes > 0 && ((sendTo >= 0 && send == nullptr) || (recvFrom >= 0 && recv == nullptr))) {
    return makeError(ErrorCode::kInvalidArgument, what() + ": null buffer");
  }
  if (sendTo < 0 && recvFrom < 0) return okResult();
  const InFlightMark inFlight(status_.get(), waitPublished_, kind,
                              std::max(sendMessage, recvMessage));
  if (sendTo >= 0) ++sent_[static_cast<std::size_t>(sendTo)];
  if (recvFrom >= 0) ++received_[static_cast<std::size_t>(recvFrom)];
  const GroupCall call{0, Clock::now() + timeout_, timeout_, what};
  if (auto status = groups_->run().permute(call, send, recv, bytes, sendTo, recvFrom, sendMessage,
                                           recvMessage);
      !status) {
    return fail(std::move(status).error());
  }
  return okResult();
}

// -1 means "no peer" to permute; to send and recv every negative peer is an error.
Result<void> Communicator::send(const void* data, std::size_t count, DataType type, int peer) {
  if (peer < 0) peer = std::numeric_limits<int>::min();
  return pointToPoint(OpKind::kSend, data, nullptr, count, type, peer, -1);
}

Result<void> Communicator::recv(void* data, std::size_t count, DataType type, int peer) {
  if (peer < 0) peer = std::numeric_limits<int>::min();
  return pointToPoint(OpKind::kRecv, nullptr, data, count, type, -1, peer);
}

Result<void> Communicator::permute(const void* send, void* recv, std::size_t count, DataType type,
                                   int sendTo, int recvFrom) {
  return pointToPoint(OpKind::kPermute, send, recv, count, type, sendTo, recvFrom);
}

// ---- asynchronous ----

Request Communicator::async(std::function<Result<void>(Communicator&)> operation) {
  if (!worker_) worker_ = std::make_unique<AsyncWorker>();
  return worker_->post([this, operation = std::move(operation)] { return operation(*this); });
}

Request Communicator::allReduceAsync(const void* send, void* recv, std::size_t count, DataType type,
                                     ReduceOp op) {
  return async([=](Communicator& c) { return c.allReduce(send, recv, count, type, op); });
}

Request Communicator::allGatherAsync(const void* send, void* recv, std::size_t sendCount,
                                     DataType type) {
  return async([=](Communicator& c) { return c.allGather(send, recv, sendCount, type); });
}

Request Communicator::reduceScatterAsync(const void* send, void* recv, std::size_t recvCount,
                                         DataType type, ReduceOp op) {
  return async([=](Communicator& c) { return c.reduceScatter(send, recv, recvCount, type, op); });
}

Request Communicator::broadcastAsync(const void* send, void* recv, std::size_t count, DataType type,
                                     int root) {
  return async([=](Communicator& c) { return c.broadcast(send, recv, count, type, root); });
}

Request Communicator::barrierAsync() {
  return async([](Communicator& c) { return c.barrier(); });
}

}  // namespace torus::coll
