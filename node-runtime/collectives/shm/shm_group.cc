// ShmGroup's machinery: attaching to the control segment, arriving, publishing buffers and
// resolving the peers'. One operation's protocol is in shm_protocol.cc, the waits in
// shm_waits.h, the collectives in shm_collectives.cc.
#include "node-runtime/collectives/shm/shm_group.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/log.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_waits.h"

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
  freedSeen_.assign(static_cast<std::size_t>(size_), 0);
}

ShmGroup::~ShmGroup() = default;

bool ShmGroup::exited(int r) const {
  if (r < 0 || static_cast<std::size_t>(r) >= pidfds_.size()) return false;
  const UniqueFd& fd = pidfds_[static_cast<std::size_t>(r)];
  if (!fd) return false;
  pollfd ready{fd.get(), POLLIN, 0};
  return ::poll(&ready, 1, 0) == 1;
}

void ShmGroup::unlinkSegmentsOfExited() const {
  for (int r = 0; r < size_; ++r) {
    if (exited(r)) segments_.unlinkOwnedBy(r);
  }
}

void ShmGroup::unlinkSegmentsOfProcess(int pid) const {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && ranks_[static_cast<std::size_t>(r)].pid == pid) segments_.unlinkOwnedBy(r);
  }
}

Result<void> ShmGroup::attach(ShmSegment control, const std::string& context,
                              std::chrono::milliseconds timeout) {
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
  const GroupCall call{0, Clock::now() + timeout, timeout, what};
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

}  // namespace torus::coll
