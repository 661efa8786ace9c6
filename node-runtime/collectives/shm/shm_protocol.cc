// How one operation runs on a ShmGroup's control segment: the peers' descriptors checked
// against this rank's, the choice between the control slots and the direct path, one collective
// on either (two barriers, or one through the slots), and point-to-point messages through the
// mailboxes. The waits and buffers they use are in shm_group.cc; the collectives in
// shm_collectives.cc.
#include <cstring>

#include "common/base/log.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_group.h"
#include "node-runtime/collectives/shm/shm_waits.h"

namespace torus::coll {

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
