// ShmGroup's machinery: attaching to the control segment, waiting, publishing buffers and
// resolving the peers', one collective on the direct path or the slots, point to point. The
// collectives themselves are in shm_collectives.cc.
#include "node-runtime/collectives/shm/shm_group.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/log.h"
#include "node-runtime/collectives/control_layout.h"

namespace torus::coll {

Result<ShmSegment> ShmGroup::createControl(std::uint64_t session, int size) {
  auto control = ShmSegment::create("/torus-" + hex(session) + "-ctl", controlBytes(size));
  if (!control) return std::move(control).error();
  auto* layout = reinterpret_cast<ControlLayout*>(control->data());
  layout->size = static_cast<std::uint64_t>(size);
  storeRelease(layout->magic, kMagic);
  return control;
}

ShmGroup::ShmGroup(ShmGroupOptions options)
    : session_(options.session),
      rank_(options.rank),
      size_(static_cast<int>(options.ranks.size())),
      ranks_(std::move(options.ranks)),
      labels_(std::move(options.labels)),
      slotPath_(options.slotPath),
      spin_(options.spin),
      segments_(options.session, options.rank) {
  scratch_.resize(kBlockBytes);
  freedSeen_.assign(static_cast<std::size_t>(size_), 0);
}

ShmGroup::~ShmGroup() = default;

Result<void> ShmGroup::attach(ShmSegment control, const std::string& context,
                              std::chrono::milliseconds timeout) {
  timeout_ = timeout;
  if (rank_ == 0) {
    control_ = std::move(control);
  } else {
    auto opened = ShmSegment::open("/torus-" + hex(session_) + "-ctl");
    if (!opened) return std::move(opened).error().withContext(context);
    control_ = std::move(*opened);
  }
  layout_ = reinterpret_cast<ControlLayout*>(control_.data());
  if (control_.size() < controlBytes(size_) || loadAcquire(layout_->magic) != kMagic ||
      layout_->size != static_cast<std::uint64_t>(size_)) {
    return makeError(ErrorCode::kInternal, context + ": control segment has the wrong layout");
  }
  slot(layout_, rank_).pid = static_cast<std::int32_t>(::getpid());

  // A pidfd turns "peer died" into a poll instead of a timeout (zombies count as dead too).
  pidfds_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const long fd = ::syscall(SYS_pidfd_open, ranks_[static_cast<std::size_t>(r)].pid, 0);
    if (fd >= 0) pidfds_[static_cast<std::size_t>(r)] = UniqueFd(static_cast<int>(fd));
  }

  // Everyone has mapped the control segment after this; its name can go, so a crash later
  // leaves nothing behind in /dev/shm.
  slot(layout_, rank_).desc[0] = OpDescriptor{};
  slot(layout_, rank_).desc[0].op = OpKind::kSetup;
  const auto what = [] { return std::string("setup"); };
  const GroupCall call{0, Clock::now() + timeout_, timeout_, what};
  TORUS_RETURN_IF_ERROR(arriveAndWait(call), context);
  control_.unlinkNow();
  return okResult();
}

void ShmGroup::markAborted(const std::string& reason) {
  if (layout_ == nullptr) return;
  RankSlot& mine = slot(layout_, rank_);
  std::snprintf(mine.reason, sizeof(mine.reason), "%s", reason.c_str());
  std::atomic_ref<std::uint32_t>(mine.aborted).store(1, std::memory_order_release);
}

std::string ShmGroup::label(int r) const {
  return labels_.empty() ? std::to_string(r) : std::to_string(labels_[static_cast<std::size_t>(r)]);
}

std::string ShmGroup::rankList(const std::vector<int>& ranks) const {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += label(ranks[i]);
    out += " (pid " + std::to_string(ranks_[static_cast<std::size_t>(ranks[i])].pid) + ")";
  }
  return out;
}

// ---- waiting ----

// Spins briefly (only when every rank has a CPU), then yields, then sleeps in growing steps,
// so oversubscribed ranks let the ones they wait for run. Every millisecond it checks the
// deadline, whether a pending peer has exited (pidfd readable) and whether any peer aborted.
template <typename Done, typename Pending>
Result<void> ShmGroup::waitUntil(const GroupCall& call, Done done, Pending pending) {
  if (done()) return okResult();
  const auto start = Clock::now();
  const auto deadline = start + call.timeout;
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
                         call.what() + ": rank " + label(r) + " gave up: " + reason);
      }
    }
    if (trouble_) {
      if (auto trouble = trouble_()) {
        return makeError(ErrorCode::kUnavailable, call.what() + ": " + *trouble);
      }
    }
    const std::vector<int> waitingFor = pending();
    if (status_ != nullptr) {
      std::lock_guard lock(status_->mutex);
      status_->waitingFor.clear();
      for (int r : waitingFor) {
        status_->waitingFor.push_back(labels_.empty() ? r : labels_[static_cast<std::size_t>(r)]);
      }
      if (waitPublished_ != nullptr) *waitPublished_ = true;
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
      // this session that it owned, so /dev/shm does not fill up with dead ranks' memory.
      for (int r : dead)
        segments_.unlinkOwnedBy(r);
      return makeError(ErrorCode::kUnavailable, call.what() + ": " + rankList(dead) + " exited");
    }
    if (now >= deadline) {
      return makeError(ErrorCode::kDeadlineExceeded,
                       call.what() + ": nothing from " + rankList(waitingFor) + " in " +
                           std::to_string(call.timeout.count()) + " ms");
    }
  }
}

template <typename Arrived>
Result<void> ShmGroup::waitForAll(const GroupCall& call, Arrived arrived) {
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
  return waitUntil(call, done, pending);
}

Result<void> ShmGroup::arriveAndWait(const GroupCall& call) {
  const std::uint64_t target = ++epoch_;
  storeRelease(arrival(layout_, rank_).epoch, target);
  return waitForAll(call, [&](int r) { return loadAcquire(arrival(layout_, r).epoch) >= target; });
}

// ---- buffers ----

Result<void> ShmGroup::ensureStaging(std::size_t bytes) {
  if (staging_.data() != nullptr && staging_.size() >= bytes) return okResult();
  std::size_t want = std::max<std::size_t>({bytes, staging_.size() * 2, 1 << 16});
  want = (want + 4095) & ~std::size_t{4095};
  SegmentRegistry& registry = segments_.registry();
  const std::uint64_t id = registry.nextId();
  auto segment = ShmSegment::create(segments_.name(rank_, id), want);
  if (!segment) return std::move(segment).error().withContext("growing the staging buffer");
  if (stagingId_ != 0) registry.remove(stagingId_);
  staging_ = std::move(*segment);
  stagingId_ = id;
  registry.add(id, staging_.data(), staging_.size());
  return okResult();
}

Result<const std::byte*> ShmGroup::resolve(int owner, SegmentRef ref, std::size_t bytes) {
  if (ref.segment == 0) {
    if (bytes == 0) return static_cast<const std::byte*>(nullptr);
    return makeError(
        ErrorCode::kInvalidArgument,
        "rank " + label(owner) + " published no buffer for " + std::to_string(bytes) + " bytes");
  }
  std::byte* base = nullptr;
  std::size_t size = 0;
  if (owner == rank_) {
    std::tie(base, size) = segments_.registry().lookup(ref.segment);
  } else {
    const auto key = std::make_pair(owner, ref.segment);
    auto it = peerSegments_.find(key);
    if (it == peerSegments_.end()) {
      auto segment = ShmSegment::open(segments_.name(owner, ref.segment));
      if (!segment) {
        return std::move(segment).error().withContext("mapping rank " + label(owner) + "'s buffer");
      }
      it = peerSegments_.emplace(key, std::move(*segment)).first;
    }
    base = it->second.data();
    size = it->second.size();
  }
  if (base == nullptr || ref.offset + bytes > size) {
    return makeError(ErrorCode::kInvalidArgument,
                     "rank " + label(owner) + "'s buffer (segment " + std::to_string(ref.segment) +
                         ", offset " + std::to_string(ref.offset) + ") is smaller than " +
                         std::to_string(bytes) + " bytes");
  }
  return static_cast<const std::byte*>(base + ref.offset);
}

// Publishes the segments this rank freed and drops the mappings of segments the peers freed, so
// a peer's memory is released when it frees a tensor, not when this group goes away.
void ShmGroup::exchangeFreed() {
  RankSlot& mine = slot(layout_, rank_);
  for (std::uint64_t id : segments_.registry().takeFreed()) {
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

Result<void> ShmGroup::validatePeer(int peer, const OpDescriptor& theirs,
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
  return makeError(ErrorCode::kFailedPrecondition, "rank " + label(peer) + " called " +
                                                       describe(theirs) + ", this rank called " +
                                                       describe(mine));
}

Result<void> ShmGroup::validatePeers(const OpDescriptor& mine) const {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (auto status = validatePeer(r, slot(layout_, r).desc[mine.sequence & 1], mine); !status) {
      return status;
    }
  }
  return okResult();
}

bool ShmGroup::useSlots(OpKind op, std::size_t bytes) {
  const bool slots = slotPath_ && bytes <= kInlineBytes;
  const std::uint64_t bit = std::uint64_t{1} << (2 * static_cast<unsigned>(op) + (slots ? 1U : 0U));
  if ((loggedChoices_ & bit) == 0) {
    loggedChoices_ |= bit;
    TORUS_LOG(Debug, Tuning, "algorithm chosen", {"op", opName(op)}, {"bytes", bytes},
              {"algorithm", slots ? "shm slots" : "shm direct"}, {"ranks", size_});
  }
  return slots;
}

Result<void> ShmGroup::runCollective(const GroupCall& call, Plan plan,
                                     FunctionRef<void(const Views&)> body) {
  plan.desc.sequence = ++sequence_;
  exchangeFreed();

  // Where my input and output live, as the peers will find them.
  SegmentRegistry& registry = segments_.registry();
  const bool sendNeeded = plan.sendBytes > 0 && plan.send != nullptr;
  const bool recvNeeded = plan.recvBytes > 0 && plan.recv != nullptr;
  std::optional<SegmentRef> in;
  std::optional<SegmentRef> out;
  if (sendNeeded && !plan.stageSend) in = registry.find(plan.send, plan.sendBytes);
  if (recvNeeded) out = registry.find(plan.recv, plan.recvBytes);
  const bool stageIn = sendNeeded && !in;
  const bool stageOut = recvNeeded && !out;
  const std::size_t inArea = stageIn ? (plan.sendBytes + 63) & ~std::size_t{63} : 0;
  if (stageIn || stageOut) {
    TORUS_RETURN_IF_ERROR(ensureStaging(inArea + (stageOut ? plan.recvBytes : 0)), call.what());
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

  if (auto status = arriveAndWait(call); !status) return status;
  TORUS_RETURN_IF_ERROR(validatePeers(plan.desc), call.what());
  views_.in.resize(static_cast<std::size_t>(size_));
  views_.out.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const OpDescriptor& d = r == rank_ ? plan.desc : slot(layout_, r).desc[parity];
    auto inView = resolve(r, d.in, plan.peerInBytes(d, r, size_));
    if (!inView) return std::move(inView).error().withContext(call.what());
    auto outView = resolve(r, d.out, plan.peerOutBytes(d, r, size_));
    if (!outView) return std::move(outView).error().withContext(call.what());
    views_.in[static_cast<std::size_t>(r)] = *inView;
    views_.out[static_cast<std::size_t>(r)] = const_cast<std::byte*>(*outView);
  }
  body(views_);
  const auto completion = [&] { return call.what() + " (completion)"; };
  const GroupCall completionCall{call.sequence, call.deadline, call.timeout, completion};
  if (auto status = arriveAndWait(completionCall); !status) return status;
  if (stageOut) std::memcpy(plan.recv, staging_.data() + inArea, plan.recvBytes);
  return okResult();
}

// Small messages: each rank copies its input into its own slot and arrives; once everyone has
// arrived, each rank reads the peers' slots and computes its own result locally. One wait
// instead of two, no segment lookups. Slots alternate by sequence parity: a rank writes the
// slot of collective k+2 only after everyone arrived at k+1, i.e. after everyone finished
// reading its slot of collective k.
Result<void> ShmGroup::runInline(const GroupCall& call, OpDescriptor desc, const void* send,
                                 std::size_t bytes,
                                 FunctionRef<void(std::span<const std::byte* const>)> body) {
  desc.sequence = ++sequence_;
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
  if (auto status = waitForAll(call, arrived); !status) return status;
  inlineViews_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const InlineBlock& theirs = slot(layout_, r).inlineBlock[parity];
    if (r != rank_) {
      TORUS_RETURN_IF_ERROR(validatePeer(r, theirs.call.descriptor(), desc), call.what());
    }
    inlineViews_[static_cast<std::size_t>(r)] = theirs.data;
  }
  body(inlineViews_);
  return okResult();
}

// ---- point to point ----

// Publishes `data` in the mailbox to `peer`: a runtime tensor by reference, anything else
// through the staging segment (which stays untouched until the peer took it).
Result<void> ShmGroup::post(const void* data, std::size_t bytes, int peer, std::uint64_t message) {
  Mailbox& box = mailbox(layout_, rank_, peer);
  std::optional<SegmentRef> ref;
  if (bytes > 0) ref = segments_.registry().find(data, bytes);
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

// Post the send (the peer copies it out of shared memory), take the receive, then wait until the
// send was taken. Posting before receiving is what lets a ring of permutes run without deadlock.
Result<void> ShmGroup::permute(const GroupCall& call, const void* send, void* recv,
                               std::size_t bytes, int sendTo, int recvFrom,
                               std::uint64_t sendMessage, std::uint64_t recvMessage) {
  exchangeFreed();
  if (sendTo >= 0) TORUS_RETURN_IF_ERROR(post(send, bytes, sendTo, sendMessage), call.what());
  if (recvFrom >= 0) {
    Mailbox& box = mailbox(layout_, recvFrom, rank_);
    auto posted = [&] { return loadAcquire(box.posted) >= recvMessage; };
    auto pendingPeer = [recvFrom] { return std::vector<int>{recvFrom}; };
    if (auto status = waitUntil(call, posted, pendingPeer); !status) return status;
    if (box.bytes != bytes) {
      return makeError(ErrorCode::kFailedPrecondition,
                       call.what() + ": rank " + label(recvFrom) + " sent " +
                           std::to_string(box.bytes) + " bytes, expected " + std::to_string(bytes));
    }
    auto source = resolve(recvFrom, box.ref, bytes);
    if (!source) return std::move(source).error().withContext(call.what());
    if (bytes > 0) std::memcpy(recv, *source, bytes);
    storeRelease(box.taken, recvMessage);
  }
  if (sendTo >= 0) {
    Mailbox& box = mailbox(layout_, rank_, sendTo);
    auto taken = [&] { return loadAcquire(box.taken) >= sendMessage; };
    auto pendingPeer = [sendTo] { return std::vector<int>{sendTo}; };
    if (auto status = waitUntil(call, taken, pendingPeer); !status) return status;
  }
  return okResult();
}

}  // namespace torus::coll
