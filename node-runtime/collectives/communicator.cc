#include "node-runtime/collectives/communicator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "node-runtime/collectives/control_layout.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/segment_registry.h"
#include "node-runtime/collectives/status.h"

namespace torus::coll {

// ---- waiting ----

Error Communicator::fail(Error error) {
  if (!broken_) {
    broken_ = error;
    if (status_) {
      std::lock_guard lock(status_->mutex);
      status_->brokenBy = error.message;
    }
    if (layout_ != nullptr) {
      RankSlot& mine = slot(layout_, rank_);
      std::snprintf(mine.reason, sizeof(mine.reason), "%s", error.message.c_str());
      std::atomic_ref<std::uint32_t>(mine.aborted).store(1, std::memory_order_release);
    }
    TORUS_LOG(Error, Coll, "communicator broken", {"comm", name_}, {"rank", rank_},
              {"error", error.message});
    // Hostmates waiting in the host's shared-memory stage learn of it at once; ranks on other
    // hosts through the bootstrap link, unless it is the link that told us (they know).
    if (local_) local_->fail(error);
    if (link_ && !link_->anyTrouble()) link_->announceAbort(session_, rank_, error.message);
    // A hostmate that died over libfabric (no pidfd wait saw it) leaves its segments behind:
    // remove them, as the shared-memory path does (probe row 14).
    if (link_) {
      const std::string& myHost = ranks_[static_cast<std::size_t>(rank_)].hostId;
      for (const int r : deadMembers()) {
        if (ranks_[static_cast<std::size_t>(r)].hostId == myHost) unlinkSegmentsOf(r);
      }
    }
  }
  return error;
}

// Spins briefly (only when every rank has a CPU), then yields, then sleeps in growing steps,
// so oversubscribed ranks let the ones they wait for run. Every millisecond it checks the
// deadline, whether a pending peer has exited (pidfd readable) and whether any peer aborted.
template <typename Done, typename Pending, typename Describe>
Result<void> Communicator::waitUntil(Done done, Pending pending, Describe what) {
  if (done()) return okResult();
  const auto start = Clock::now();
  const auto deadline = start + timeout_;
  auto nextCheck = start + kLivenessInterval;
  const unsigned spinLimit = spin_ ? 4000 : 0;
  const unsigned yieldLimit = spinLimit + 20000;
  std::chrono::microseconds nap{20};
  for (unsigned iteration = 0;; ++iteration) {
    if (done()) return okResult();
    if (iteration < spinLimit) {
      cpuRelax();
      continue;
    }
    if (iteration < yieldLimit) {
      ::sched_yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
    if ((iteration & 15U) != 0 && iteration < yieldLimit) continue;
    const auto now = Clock::now();
    if (now < nextCheck) continue;
    nextCheck = now + kLivenessInterval;
    if (done()) return okResult();
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      RankSlot& peer = slot(layout_, r);
      if (std::atomic_ref<std::uint32_t>(peer.aborted).load(std::memory_order_acquire) != 0) {
        char reason[sizeof(peer.reason)];
        std::memcpy(reason, peer.reason, sizeof(reason));
        reason[sizeof(reason) - 1] = '\0';
        return makeError(ErrorCode::kAborted,
                         what() + ": rank " + rankName(r) + " gave up: " + reason);
      }
    }
    if (auto trouble = remoteTrouble()) {
      return makeError(ErrorCode::kUnavailable, what() + ": " + *trouble);
    }
    const std::vector<int> waitingFor = pending();
    if (status_) {
      std::lock_guard lock(status_->mutex);
      status_->waitingFor = waitingFor;
      waitPublished_ = true;
    }
    std::vector<int> dead;
    for (int r : waitingFor) {
      const UniqueFd& fd = pidfds_[static_cast<std::size_t>(r)];
      if (!fd) continue;
      pollfd pfd{fd.get(), POLLIN, 0};
      if (::poll(&pfd, 1, 0) == 1) dead.push_back(r);
    }
    if (!dead.empty()) {
      // A killed rank cannot unlink its segments (tensors, staging): remove every name of
      // this session that it owned, so /dev/shm does not fill up with dead ranks' memory
      // (pages still mapped by a survivor go away with its mapping).
      for (int r : dead)
        unlinkSegmentsOf(r);
      return makeError(ErrorCode::kUnavailable, what() + ": " + rankList(dead) + " exited");
    }
    if (now >= deadline) {
      return makeError(ErrorCode::kDeadlineExceeded, what() + ": nothing from " +
                                                         rankList(waitingFor) + " in " +
                                                         std::to_string(timeout_.count()) + " ms");
    }
  }
}

template <typename Arrived, typename Describe>
Result<void> Communicator::waitForAll(Arrived arrived, Describe what) {
  auto done = [&] {
    for (int r = 0; r < size_; ++r) {
      if (!arrived(r)) return false;
    }
    return true;
  };
  auto pending = [&] {
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (!arrived(r)) missing.push_back(r);
    }
    return missing;
  };
  return waitUntil(done, pending, what);
}

template <typename Describe>
Result<void> Communicator::arriveAndWait(Describe what) {
  const std::uint64_t target = ++epoch_;
  storeRelease(arrival(layout_, rank_).epoch, target);
  return waitForAll([&](int r) { return loadAcquire(arrival(layout_, r).epoch) >= target; }, what);
}

Result<void> Communicator::meet(std::string_view what) {
  return arriveAndWait([what] { return std::string(what); });
}

// ---- buffers ----

Result<void> Communicator::ensureStaging(std::size_t bytes) {
  if (staging_.data() != nullptr && staging_.size() >= bytes) return okResult();
  std::size_t want = std::max<std::size_t>({bytes, staging_.size() * 2, 1 << 16});
  want = (want + 4095) & ~std::size_t{4095};
  const std::uint64_t id = registry_->nextId();
  auto segment = ShmSegment::create(segmentName(rank_, id), want);
  if (!segment) return std::move(segment).error().withContext("growing the staging buffer");
  if (stagingId_ != 0) registry_->remove(stagingId_);
  staging_ = std::move(*segment);
  stagingId_ = id;
  registry_->add(id, staging_.data(), staging_.size());
  return okResult();
}

Result<const std::byte*> Communicator::resolve(int owner, SegmentRef ref, std::size_t bytes) {
  if (ref.segment == 0) {
    if (bytes == 0) return static_cast<const std::byte*>(nullptr);
    return makeError(ErrorCode::kInvalidArgument, "rank " + std::to_string(owner) +
                                                      " published no buffer for " +
                                                      std::to_string(bytes) + " bytes");
  }
  std::byte* base = nullptr;
  std::size_t size = 0;
  if (owner == rank_) {
    std::tie(base, size) = registry_->lookup(ref.segment);
  } else {
    const auto key = std::make_pair(owner, ref.segment);
    auto it = peerSegments_.find(key);
    if (it == peerSegments_.end()) {
      auto segment = ShmSegment::open(segmentName(owner, ref.segment));
      if (!segment) {
        return std::move(segment).error().withContext("mapping rank " + std::to_string(owner) +
                                                      "'s buffer");
      }
      it = peerSegments_.emplace(key, std::move(*segment)).first;
    }
    base = it->second.data();
    size = it->second.size();
  }
  if (base == nullptr || ref.offset + bytes > size) {
    return makeError(ErrorCode::kInvalidArgument,
                     "rank " + std::to_string(owner) + "'s buffer (segment " +
                         std::to_string(ref.segment) + ", offset " + std::to_string(ref.offset) +
                         ") is smaller than " + std::to_string(bytes) + " bytes");
  }
  return static_cast<const std::byte*>(base + ref.offset);
}

// Publishes the segments this rank freed and drops the mappings of segments the peers freed, so
// a peer's memory is released when it frees a tensor, not when this communicator goes away.
void Communicator::exchangeFreed() {
  RankSlot& mine = slot(layout_, rank_);
  for (std::uint64_t id : registry_->takeFreed()) {
    const std::uint64_t n = mine.freedCount;
    mine.freed[n % kFreedRing] = id;
    storeRelease(mine.freedCount, n + 1);
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    RankSlot& peer = slot(layout_, r);
    const std::uint64_t published = loadAcquire(peer.freedCount);
    std::uint64_t& seen = freedSeen_[static_cast<std::size_t>(r)];
    if (published == seen) continue;
    if (published - seen > kFreedRing) {
      // Fell behind the ring: forget every mapping of that peer; live ones are mapped again
      // by name when next used.
      std::erase_if(peerSegments_, [r](const auto& entry) { return entry.first.first == r; });
    } else {
      for (std::uint64_t k = seen; k < published; ++k) {
        peerSegments_.erase(std::make_pair(r, peer.freed[k % kFreedRing]));
      }
    }
    seen = published;
  }
}

// ---- one collective ----

Result<void> Communicator::validatePeer(int peer, const OpDescriptor& theirs,
                                        const OpDescriptor& mine) const {
  const bool reducing = mine.op == OpKind::kAllReduce || mine.op == OpKind::kReduceScatter ||
                        mine.op == OpKind::kReduce;
  const bool rooted = mine.op == OpKind::kBroadcast || mine.op == OpKind::kReduce;
  if (theirs.sequence == mine.sequence && theirs.op == mine.op && theirs.count == mine.count &&
      theirs.type == mine.type && (!reducing || theirs.reduceOp == mine.reduceOp) &&
      (!rooted || theirs.root == mine.root)) {
    return okResult();
  }
  const auto describe = [](const OpDescriptor& d) {
    return std::string(opName(d.op)) + " seq=" + std::to_string(d.sequence) +
           " count=" + std::to_string(d.count) + " dtype=" + std::string(dataTypeName(d.type)) +
           " op=" + std::string(reduceOpName(d.reduceOp)) + " root=" + std::to_string(d.root);
  };
  return makeError(ErrorCode::kFailedPrecondition, "rank " + rankName(peer) + " called " +
                                                       describe(theirs) + ", this rank called " +
                                                       describe(mine));
}

Result<void> Communicator::validatePeers(const OpDescriptor& mine) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (auto status = validatePeer(r, slot(layout_, r).desc[mine.sequence & 1], mine); !status) {
      return status;
    }
  }
  return okResult();
}

std::string Communicator::opContext(const OpDescriptor& desc) const {
  return std::string(opName(desc.op)) + " seq=" + std::to_string(desc.sequence) + " on " + name_ +
         " (rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ")";
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

bool Communicator::useSlots(OpKind op, std::size_t bytes) const {
  const bool slots = slotPath_ && bytes <= kInlineBytes;
  TORUS_LOG(Debug, Tuning, "algorithm chosen", {"comm", name_}, {"op", opName(op)},
            {"bytes", bytes}, {"algorithm", slots ? "slots" : "direct"});
  return slots;
}

Request Communicator::async(std::function<Result<void>(Communicator&)> operation) {
  if (!worker_) worker_ = std::make_unique<AsyncWorker>();
  return worker_->post([this, operation = std::move(operation)] { return operation(*this); });
}

Result<void> Communicator::runCollective(Plan plan, FunctionRef<void(const Views&)> body) {
  TORUS_RETURN_IF_ERROR(checkCaller(opName(plan.desc.op)), "refused");
  plan.desc.sequence = sequence_ + 1;
  // Messages are built only when something fails: the fast path allocates nothing.
  const auto what = [&] { return opContext(plan.desc); };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  ++sequence_;
  const InFlightMark inFlight(status_.get(), waitPublished_, plan.desc.op, plan.desc.sequence);
  exchangeFreed();

  // Where my input and output live, as the peers will find them.
  const bool sendNeeded = plan.sendBytes > 0 && plan.send != nullptr;
  const bool recvNeeded = plan.recvBytes > 0 && plan.recv != nullptr;
  std::optional<SegmentRef> in;
  std::optional<SegmentRef> out;
  if (sendNeeded && !plan.stageSend) in = registry_->find(plan.send, plan.sendBytes);
  if (recvNeeded) out = registry_->find(plan.recv, plan.recvBytes);
  const bool stageIn = sendNeeded && !in;
  const bool stageOut = recvNeeded && !out;
  const std::size_t inArea = stageIn ? (plan.sendBytes + 63) & ~std::size_t{63} : 0;
  if (stageIn || stageOut) {
    if (auto grown = ensureStaging(inArea + (stageOut ? plan.recvBytes : 0)); !grown) {
      return fail(std::move(grown).error().withContext(what()));
    }
  }
  if (stageIn) {
    std::memcpy(staging_.data(), plan.send, plan.sendBytes);
    in = SegmentRef{stagingId_, 0};
  }
  if (stageOut) out = SegmentRef{stagingId_, inArea};
  plan.desc.in = in.value_or(SegmentRef{});
  plan.desc.out = out.value_or(SegmentRef{});
  const unsigned parity = plan.desc.sequence & 1;
  slot(layout_, rank_).desc[parity] = plan.desc;

  if (auto status = arriveAndWait(what); !status) return fail(std::move(status).error());
  if (auto status = validatePeers(plan.desc); !status) {
    return fail(std::move(status).error().withContext(what()));
  }
  views_.in.resize(static_cast<std::size_t>(size_));
  views_.out.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const OpDescriptor& d = r == rank_ ? plan.desc : slot(layout_, r).desc[parity];
    auto inView = resolve(r, d.in, plan.peerInBytes(d, r, size_));
    if (!inView) return fail(std::move(inView).error().withContext(what()));
    auto outView = resolve(r, d.out, plan.peerOutBytes(d, r, size_));
    if (!outView) return fail(std::move(outView).error().withContext(what()));
    views_.in[static_cast<std::size_t>(r)] = *inView;
    views_.out[static_cast<std::size_t>(r)] = const_cast<std::byte*>(*outView);
  }
  body(views_);
  if (auto status = arriveAndWait([&] { return what() + " (completion)"; }); !status) {
    return fail(std::move(status).error());
  }
  if (stageOut) std::memcpy(plan.recv, staging_.data() + inArea, plan.recvBytes);
  return okResult();
}

// Small messages: each rank copies its input into its own slot and arrives; once everyone has
// arrived, each rank reads the peers' slots and computes its own result locally. One wait
// instead of two, no segment lookups. Slots alternate by sequence parity: a rank writes the
// slot of collective k+2 only after everyone arrived at k+1, i.e. after everyone finished
// reading its slot of collective k.
Result<void> Communicator::runInline(OpDescriptor desc, const void* send, std::size_t bytes,
                                     FunctionRef<void(std::span<const std::byte* const>)> body) {
  TORUS_RETURN_IF_ERROR(checkCaller(opName(desc.op)), "refused");
  desc.sequence = sequence_ + 1;
  const auto what = [&] { return opContext(desc); };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  ++sequence_;
  const InFlightMark inFlight(status_.get(), waitPublished_, desc.op, desc.sequence);
  const unsigned parity = desc.sequence & 1;
  RankSlot& mine = slot(layout_, rank_);
  InlineBlock& block = mine.inlineBlock[parity];
  if (bytes > 0) std::memcpy(block.data, send, bytes);
  block.call = CallSignature::of(desc);
  // The descriptor and the arrival line too: a peer that (wrongly) called a collective on the
  // general path waits on those, and names the mismatch instead of timing out.
  mine.desc[parity] = desc;
  const std::uint64_t target = ++epoch_;
  storeRelease(block.epoch, target);
  storeRelease(arrival(layout_, rank_).epoch, target);
  const auto arrived = [&](int r) {
    return loadAcquire(slot(layout_, r).inlineBlock[parity].epoch) >= target;
  };
  if (auto status = waitForAll(arrived, what); !status) {
    return fail(std::move(status).error());
  }
  inlineViews_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const InlineBlock& theirs = slot(layout_, r).inlineBlock[parity];
    if (r != rank_) {
      if (auto status = validatePeer(r, theirs.call.descriptor(), desc); !status) {
        return fail(std::move(status).error().withContext(what()));
      }
    }
    inlineViews_[static_cast<std::size_t>(r)] = theirs.data;
  }
  body(inlineViews_);
  return okResult();
}

// ---- point to point ----

// Send, Recv and Permute in one: post the send (the peer copies it out of shared memory, or the
// provider carries it), take the receive, then wait until the send was taken. Posting before
// receiving is what lets a ring of permutes run without deadlock.
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
  if (net_) {
    const NetCall call{0, Clock::now() + timeout_, timeout_, what};
    if (auto status =
            net_->permute(call, send, recv, bytes, sendTo, recvFrom, sendMessage, recvMessage);
        !status) {
      return fail(std::move(status).error());
    }
    return okResult();
  }
  exchangeFreed();
  if (sendTo >= 0) {
    if (auto status = shmPost(send, bytes, sendTo, sendMessage); !status) {
      return fail(std::move(status).error().withContext(what()));
    }
  }
  if (recvFrom >= 0) {
    Mailbox& box = mailbox(layout_, recvFrom, rank_);
    auto posted = [&] { return loadAcquire(box.posted) >= recvMessage; };
    auto pendingPeer = [recvFrom] { return std::vector<int>{recvFrom}; };
    if (auto status = waitUntil(posted, pendingPeer, what); !status) {
      return fail(std::move(status).error());
    }
    if (box.bytes != bytes) {
      return fail(makeError(ErrorCode::kFailedPrecondition,
                            what() + ": rank " + std::to_string(recvFrom) + " sent " +
                                std::to_string(box.bytes) + " bytes, expected " +
                                std::to_string(bytes)));
    }
    auto source = resolve(recvFrom, box.ref, bytes);
    if (!source) return fail(std::move(source).error().withContext(what()));
    if (bytes > 0) std::memcpy(recv, *source, bytes);
    storeRelease(box.taken, recvMessage);
  }
  if (sendTo >= 0) {
    Mailbox& box = mailbox(layout_, rank_, sendTo);
    auto taken = [&] { return loadAcquire(box.taken) >= sendMessage; };
    auto pendingPeer = [sendTo] { return std::vector<int>{sendTo}; };
    if (auto status = waitUntil(taken, pendingPeer, what); !status) {
      return fail(std::move(status).error());
    }
  }
  return okResult();
}

// Publishes `data` in the mailbox to `peer`: a runtime tensor by reference, anything else
// through the staging segment (which stays untouched until the peer took it).
Result<void> Communicator::shmPost(const void* data, std::size_t bytes, int peer,
                                   std::uint64_t message) {
  Mailbox& box = mailbox(layout_, rank_, peer);
  std::optional<SegmentRef> ref;
  if (bytes > 0) ref = registry_->find(data, bytes);
  if (bytes > 0 && !ref) {
    TORUS_RETURN_IF_ERROR(ensureStaging(bytes), "staging the message");
    std::memcpy(staging_.data(), data, bytes);
    ref = SegmentRef{stagingId_, 0};
  }
  box.ref = ref.value_or(SegmentRef{});
  box.bytes = bytes;
  storeRelease(box.posted, message);
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

}  // namespace torus::coll
