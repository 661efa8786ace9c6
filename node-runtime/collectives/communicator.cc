#include "node-runtime/collectives/communicator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "node-runtime/collectives/status.h"

namespace torus::coll {

// ---- shared control segment ----

// Layout: header, one arrival line per rank, one slot per rank, one mailbox per (sender,
// receiver). Every field another process writes is its own cache line, so spinning readers do
// not disturb the writer's other fields. Fields are plain integers accessed with atomic_ref.
struct alignas(64) ArrivalLine {
  std::uint64_t epoch;
};
constexpr std::size_t kFreedRing = 64;
constexpr std::size_t kInlineBytes = Communicator::kInlineBytes;
struct alignas(64) RankSlot {
  std::int32_t pid;
  std::uint32_t aborted;
  OpDescriptor desc[2];  // by sequence parity: a slow peer may still read the previous one
  char reason[384];
  // Segments this rank has freed, so peers drop their mappings (ids are never reused).
  std::uint64_t freedCount;
  std::uint64_t freed[kFreedRing];
  // Small-message path: the data itself, by sequence parity (see runInline).
  alignas(64) std::byte inlineData[2][kInlineBytes];
};
struct alignas(64) Mailbox {
  std::uint64_t posted;  // messages the sender has published
  std::uint64_t pad0[7];
  std::uint64_t taken;  // messages the receiver has copied out
  std::uint64_t bytes;
  SegmentRef ref;
};
struct alignas(64) ControlLayout {
  std::uint64_t magic;
  std::uint64_t size;
};

namespace {

constexpr std::uint64_t kMagic = 0x746f7275732d6331ULL;  // "torus-c1"
constexpr std::size_t kBlockBytes = 32 * 1024;           // reduction block, fits in L1/L2
constexpr auto kLivenessInterval = std::chrono::milliseconds(1);

std::size_t controlBytes(int size) {
  const auto n = static_cast<std::size_t>(size);
  return sizeof(ControlLayout) + n * sizeof(ArrivalLine) + n * sizeof(RankSlot) +
         n * n * sizeof(Mailbox);
}
ArrivalLine& arrival(ControlLayout* layout, int rank) {
  return reinterpret_cast<ArrivalLine*>(layout + 1)[rank];
}
RankSlot& slot(ControlLayout* layout, int rank) {
  auto* slots = reinterpret_cast<RankSlot*>(&arrival(layout, static_cast<int>(layout->size)));
  return slots[rank];
}
Mailbox& mailbox(ControlLayout* layout, int from, int to) {
  const int n = static_cast<int>(layout->size);
  auto* boxes = reinterpret_cast<Mailbox*>(&slot(layout, n));
  return boxes[from * n + to];
}

inline std::uint64_t loadAcquire(std::uint64_t& value) {
  return std::atomic_ref<std::uint64_t>(value).load(std::memory_order_acquire);
}
inline void storeRelease(std::uint64_t& value, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(value).store(v, std::memory_order_release);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

// ---- process-local registry of this rank's own segments ----

class SegmentRegistry {
 public:
  std::uint64_t nextId() { return next_.fetch_add(1); }
  void add(std::uint64_t id, std::byte* base, std::size_t size) {
    std::lock_guard lock(mutex_);
    byBase_[base] = Entry{id, size};
    byId_[id] = base;
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    if (auto it = byId_.find(id); it != byId_.end()) {
      byBase_.erase(it->second);
      byId_.erase(it);
      freed_.push_back(id);
    }
  }
  std::vector<std::uint64_t> takeFreed() {
    std::lock_guard lock(mutex_);
    return std::exchange(freed_, {});
  }
  // The segment holding [p, p + bytes), if p is inside one of ours.
  std::optional<SegmentRef> find(const void* p, std::size_t bytes) const {
    std::lock_guard lock(mutex_);
    const auto* address = static_cast<const std::byte*>(p);
    auto it = byBase_.upper_bound(address);
    if (it == byBase_.begin()) return std::nullopt;
    --it;
    const std::size_t offset = static_cast<std::size_t>(address - it->first);
    if (offset + bytes > it->second.size) return std::nullopt;
    return SegmentRef{it->second.id, offset};
  }
  std::pair<std::byte*, std::size_t> lookup(std::uint64_t id) const {
    std::lock_guard lock(mutex_);
    auto it = byId_.find(id);
    if (it == byId_.end()) return {nullptr, 0};
    return {it->second, byBase_.at(it->second).size};
  }

 private:
  struct Entry {
    std::uint64_t id;
    std::size_t size;
  };
  mutable std::mutex mutex_;
  std::atomic<std::uint64_t> next_{1};
  std::map<const std::byte*, Entry, std::less<>> byBase_;
  std::map<std::uint64_t, std::byte*> byId_;
  std::vector<std::uint64_t> freed_;
};

Buffer::~Buffer() {
  if (registry_ && id_ != 0) registry_->remove(id_);
}

std::string_view opName(OpKind op) {
  switch (op) {
    case OpKind::kNone:
      return "none";
    case OpKind::kSetup:
      return "setup";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kAllReduce:
      return "allReduce";
    case OpKind::kAllGather:
      return "allGather";
    case OpKind::kReduceScatter:
      return "reduceScatter";
    case OpKind::kAllToAll:
      return "allToAll";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduce:
      return "reduce";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
  }
  return "?";
}

Result<Algorithm> parseAlgorithm(std::string_view text) {
  if (text == "auto") return Algorithm::kAuto;
  if (text == "direct") return Algorithm::kDirect;
  return makeError(ErrorCode::kInvalidArgument,
                   "unknown algorithm \"" + std::string(text) + "\" (expected auto or direct)");
}

Result<void> applyEnvironment(CommOptions& options) {
  if (const char* algo = std::getenv("TORUS_COLL_ALGO"); algo != nullptr && *algo) {
    auto parsed = parseAlgorithm(algo);
    if (!parsed) return std::move(parsed).error().withContext("TORUS_COLL_ALGO");
    options.algorithm = *parsed;
  }
  if (const char* root = std::getenv("NEURON_RT_ROOT_COMM_ID"); root != nullptr && *root) {
    options.rootAddress = root;
  }
  if (const char* timeout = std::getenv("TORUS_COLL_TIMEOUT_MS"); timeout != nullptr && *timeout) {
    auto millis = parseInt64(timeout, 1, std::int64_t{24} * 3600 * 1000);
    if (!millis) {
      return std::move(millis).error().withContext("TORUS_COLL_TIMEOUT_MS");
    }
    options.timeout = std::chrono::milliseconds(*millis);
  }
  return okResult();
}

// ---- creation ----

Result<std::unique_ptr<Communicator>> Communicator::create(CommOptions options) {
  std::unique_ptr<Communicator> comm(new Communicator());  // private constructor
  if (auto status = comm->setup(options); !status) return std::move(status).error();
  return comm;
}

Result<void> Communicator::setup(CommOptions& options) {
  rank_ = options.rank;
  size_ = options.size;
  timeout_ = options.timeout;
  name_ = options.name;
  slotPath_ = options.algorithm == Algorithm::kAuto;
  registry_ = std::make_shared<SegmentRegistry>();
  scratch_.resize(kBlockBytes);
  const std::string displayName = name_.empty() ? "comm@" + options.rootAddress : name_;

  BootstrapRequest request;
  request.rank = options.rank;
  request.size = options.size;
  request.rootAddress = options.rootAddress;
  request.commName = displayName;
  request.rootListener = std::move(options.rootListener);
  request.deadline = Clock::now() + timeout_;
  request.onSessionReady = [this](std::uint64_t session) { return createControl(session); };
  auto boot = bootstrap(std::move(request));
  if (!boot) return std::move(boot).error();
  session_ = boot->session;
  ranks_ = std::move(boot->ranks);
  if (name_.empty()) name_ = "comm-" + hex(session_).substr(8);
  const std::string context = "creating " + name_ + " (rank " + std::to_string(rank_) + " of " +
                              std::to_string(size_) + ")";

  // Ranks on the same host share memory; anything else needs the libfabric transport.
  std::vector<int> remote;
  for (int r = 0; r < size_; ++r) {
    if (ranks_[static_cast<std::size_t>(r)].hostId !=
        ranks_[static_cast<std::size_t>(rank_)].hostId) {
      remote.push_back(r);
    }
  }
  if (!remote.empty()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     context + ": " + rankList(remote) + " on another host (" +
                         ranks_[static_cast<std::size_t>(remote.front())].hostId +
                         "); only the shared-memory transport is implemented");
  }

  return attachControl(context);
}

Result<void> Communicator::createControl(std::uint64_t session) {
  auto control = ShmSegment::create("/torus-" + hex(session) + "-ctl", controlBytes(size_));
  if (!control) return std::move(control).error();
  control_ = std::move(*control);
  auto* layout = reinterpret_cast<ControlLayout*>(control_.data());
  layout->size = static_cast<std::uint64_t>(size_);
  storeRelease(layout->magic, kMagic);
  return okResult();
}

// Everything after the ranks are known (bootstrap or split): map the control segment, watch the
// peers' pids, and meet once so the segment's name can go.
Result<void> Communicator::attachControl(const std::string& context) {
  if (rank_ != 0) {
    auto control = ShmSegment::open("/torus-" + hex(session_) + "-ctl");
    if (!control) return std::move(control).error().withContext(context);
    control_ = std::move(*control);
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
  spin_ = size_ <= usableCpus();
  sent_.assign(static_cast<std::size_t>(size_), 0);
  received_.assign(static_cast<std::size_t>(size_), 0);
  freedSeen_.assign(static_cast<std::size_t>(size_), 0);

  // Everyone has mapped the control segment after this; its name can go, so a crash later
  // leaves nothing behind in /dev/shm.
  slot(layout_, rank_).desc[0] = OpDescriptor{};
  slot(layout_, rank_).desc[0].op = OpKind::kSetup;
  TORUS_RETURN_IF_ERROR(arriveAndWait([] { return std::string("setup"); }), context);
  control_.unlinkNow();
  status_ = std::make_shared<CommStatus>();
  status_->name = name_;
  status_->rank = rank_;
  status_->size = size_;
  for (const RankInfo& info : ranks_)
    status_->pids.push_back(info.pid);
  statusRegistration_.emplace(status_);
  TORUS_LOG(Info, Coll, "communicator ready", {"comm", name_}, {"rank", rank_}, {"size", size_},
            {"transport", "shm"}, {"spin", spin_}, {"timeout_ms", timeout_.count()});
  return okResult();
}

Communicator::~Communicator() = default;

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key) {
  TORUS_RETURN_IF_ERROR(checkCaller("split"), "refused");
  // Everyone learns everyone's (color, key) in one small AllGather on this communicator.
  const std::int32_t mine[2] = {color, key};
  std::vector<std::int32_t> all(2 * static_cast<std::size_t>(size_));
  TORUS_RETURN_IF_ERROR(allGather(mine, all.data(), 2, DataType::kI32),
                        "split of " + name_ + ": exchanging colors");
  const std::uint64_t splitIndex = ++splits_;
  std::vector<int> members;  // parent ranks in my group, ordered by (key, parent rank)
  if (color >= 0) {
    for (int r = 0; r < size_; ++r) {
      if (all[2 * static_cast<std::size_t>(r)] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return all[2 * static_cast<std::size_t>(a) + 1] < all[2 * static_cast<std::size_t>(b) + 1];
    });
  }
  std::unique_ptr<Communicator> child(new Communicator());  // private constructor
  Result<void> created = okResult();
  if (color >= 0) {
    child->size_ = static_cast<int>(members.size());
    child->rank_ =
        static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
    child->timeout_ = timeout_;
    child->slotPath_ = slotPath_;
    child->name_ = name_ + "/split" + std::to_string(splitIndex) + "." + std::to_string(color);
    child->registry_ = std::make_shared<SegmentRegistry>();
    child->scratch_.resize(kBlockBytes);
    // Same session on every member, different for every group and split: splitmix64 of both.
    std::uint64_t z = session_ ^ (splitIndex << 32) ^ static_cast<std::uint32_t>(color);
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    child->session_ = (z ^ (z >> 31)) | 1U;
    for (int r : members)
      child->ranks_.push_back(ranks_[static_cast<std::size_t>(r)]);
    if (child->rank_ == 0) created = child->createControl(child->session_);
  }
  // Every group's control segment exists after this barrier on the parent.
  TORUS_RETURN_IF_ERROR(barrier(), "split of " + name_);
  if (!created) return std::move(created).error().withContext("split of " + name_);
  if (color < 0) return std::unique_ptr<Communicator>();
  const std::string context = "creating " + child->name_ + " (rank " +
                              std::to_string(child->rank_) + " of " + std::to_string(child->size_) +
                              ")";
  TORUS_RETURN_IF_ERROR(child->attachControl(context), "split of " + name_);
  return child;
}

void Communicator::unlinkSegmentsOf(int owner) const {
  const std::string prefix = segmentName(owner, 0).substr(1);  // "torus-<session>-<rank>-0"
  const std::string stem = prefix.substr(0, prefix.size() - 1);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) == 0) ::shm_unlink(("/" + name).c_str());
  }
}

std::string Communicator::segmentName(int owner, std::uint64_t id) const {
  return "/torus-" + hex(session_) + "-" + std::to_string(owner) + "-" + std::to_string(id);
}

std::string Communicator::rankList(const std::vector<int>& ranks) const {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
    if (ranks_.size() > static_cast<std::size_t>(ranks[i])) {
      out += " (pid " + std::to_string(ranks_[static_cast<std::size_t>(ranks[i])].pid) + ")";
    }
  }
  return out;
}

Result<Buffer> Communicator::allocate(std::size_t bytes) {
  Buffer buffer;
  buffer.id_ = registry_->nextId();
  auto segment = ShmSegment::create(segmentName(rank_, buffer.id_), bytes);
  if (!segment) {
    return std::move(segment).error().withContext("allocating a " + std::to_string(bytes) +
                                                  "-byte tensor on " + name_);
  }
  buffer.segment_ = std::move(*segment);
  buffer.bytes_ = bytes;
  buffer.registry_ = registry_;
  registry_->add(buffer.id_, buffer.segment_.data(), buffer.segment_.size());
  return buffer;
}

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
                         what() + ": rank " + std::to_string(r) + " gave up: " + reason);
      }
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

template <typename Describe>
Result<void> Communicator::arriveAndWait(Describe what) {
  ++epoch_;
  const std::uint64_t target = epoch_;
  storeRelease(arrival(layout_, rank_).epoch, target);
  auto done = [&] {
    for (int r = 0; r < size_; ++r) {
      if (loadAcquire(arrival(layout_, r).epoch) < target) return false;
    }
    return true;
  };
  auto pending = [&] {
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (loadAcquire(arrival(layout_, r).epoch) < target) missing.push_back(r);
    }
    return missing;
  };
  return waitUntil(done, pending, what);
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

Result<void> Communicator::validatePeers(const OpDescriptor& mine) {
  const bool reducing = mine.op == OpKind::kAllReduce || mine.op == OpKind::kReduceScatter ||
                        mine.op == OpKind::kReduce;
  const bool rooted = mine.op == OpKind::kBroadcast || mine.op == OpKind::kReduce;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const OpDescriptor& peer = slot(layout_, r).desc[mine.sequence & 1];
    const auto describe = [](const OpDescriptor& d) {
      return std::string(opName(d.op)) + " seq=" + std::to_string(d.sequence) +
             " count=" + std::to_string(d.count) + " dtype=" + std::string(dataTypeName(d.type)) +
             " op=" + std::string(reduceOpName(d.reduceOp)) + " root=" + std::to_string(d.root);
    };
    if (peer.sequence != mine.sequence || peer.op != mine.op || peer.count != mine.count ||
        peer.type != mine.type || (reducing && peer.reduceOp != mine.reduceOp) ||
        (rooted && peer.root != mine.root)) {
      return makeError(ErrorCode::kFailedPrecondition, "rank " + std::to_string(r) + " called " +
                                                           describe(peer) + ", this rank called " +
                                                           describe(mine));
    }
  }
  return okResult();
}

// Marks a collective as in flight on the status board for its lifetime.
class Communicator::InFlight {
 public:
  InFlight(Communicator& comm, OpKind op, std::uint64_t sequence) : comm_(comm) {
    if (!comm_.status_) return;
    CommStatus& status = *comm_.status_;
    status.startedNs.store(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count(),
        std::memory_order_relaxed);
    status.sequence.store(sequence, std::memory_order_relaxed);
    status.op.store(static_cast<std::uint32_t>(op), std::memory_order_relaxed);
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() {
    if (!comm_.status_) return;
    comm_.status_->op.store(0, std::memory_order_relaxed);
    if (comm_.waitPublished_) {  // only waits that took the slow path published anything
      std::lock_guard lock(comm_.status_->mutex);
      comm_.status_->waitingFor.clear();
      comm_.waitPublished_ = false;
    }
  }

 private:
  Communicator& comm_;
};

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
  const InFlight inFlight(*this, plan.desc.op, plan.desc.sequence);
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
  const InFlight inFlight(*this, desc.op, desc.sequence);
  const unsigned parity = desc.sequence & 1;
  RankSlot& mine = slot(layout_, rank_);
  if (bytes > 0) std::memcpy(mine.inlineData[parity], send, bytes);
  mine.desc[parity] = desc;
  if (auto status = arriveAndWait(what); !status) return fail(std::move(status).error());
  if (auto status = validatePeers(desc); !status) {
    return fail(std::move(status).error().withContext(what()));
  }
  inlineViews_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    inlineViews_[static_cast<std::size_t>(r)] = slot(layout_, r).inlineData[parity];
  }
  body(inlineViews_);
  return okResult();
}

// ---- point to point ----

Result<void> Communicator::p2p(bool isSend, void* data, std::size_t count, DataType type,
                               int peer) {
  TORUS_RETURN_IF_ERROR(checkCaller(isSend ? "send" : "recv"), "refused");
  const std::size_t bytes = count * dataTypeSize(type);
  const auto index = static_cast<std::size_t>(peer);
  const std::uint64_t message =
      (isSend ? sent_ : received_).size() > index ? (isSend ? sent_ : received_)[index] + 1 : 0;
  const auto what = [&] {
    return std::string(isSend ? "send to" : "recv from") + " rank " + std::to_string(peer) +
           " msg=" + std::to_string(message) + " on " + name_ + " (rank " + std::to_string(rank_) +
           ")";
  };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  if (peer < 0 || peer >= size_ || peer == rank_) {
    return makeError(ErrorCode::kInvalidArgument,
                     what() + ": peer must be another rank in [0, " + std::to_string(size_) + ")");
  }
  if (bytes > 0 && data == nullptr) {
    return makeError(ErrorCode::kInvalidArgument, what() + ": null buffer");
  }
  const InFlight inFlight(*this, isSend ? OpKind::kSend : OpKind::kRecv, message);
  exchangeFreed();
  auto pendingPeer = [peer] { return std::vector<int>{peer}; };
  if (isSend) {
    Mailbox& box = mailbox(layout_, rank_, peer);
    const std::uint64_t n = ++sent_[index];
    std::optional<SegmentRef> ref;
    if (bytes > 0) ref = registry_->find(data, bytes);
    if (bytes > 0 && !ref) {
      if (auto grown = ensureStaging(bytes); !grown) {
        return fail(std::move(grown).error().withContext(what()));
      }
      std::memcpy(staging_.data(), data, bytes);
      ref = SegmentRef{stagingId_, 0};
    }
    box.ref = ref.value_or(SegmentRef{});
    box.bytes = bytes;
    storeRelease(box.posted, n);
    auto taken = [&] { return loadAcquire(box.taken) >= n; };
    if (auto status = waitUntil(taken, pendingPeer, what); !status) {
      return fail(std::move(status).error());
    }
    return okResult();
  }
  Mailbox& box = mailbox(layout_, peer, rank_);
  const std::uint64_t n = ++received_[index];
  auto posted = [&] { return loadAcquire(box.posted) >= n; };
  if (auto status = waitUntil(posted, pendingPeer, what); !status) {
    return fail(std::move(status).error());
  }
  if (box.bytes != bytes) {
    return fail(
        makeError(ErrorCode::kFailedPrecondition, what() + ": rank " + std::to_string(peer) +
                                                      " sent " + std::to_string(box.bytes) +
                                                      " bytes, expected " + std::to_string(bytes)));
  }
  auto source = resolve(peer, box.ref, bytes);
  if (!source) return fail(std::move(source).error().withContext(what()));
  if (bytes > 0) std::memcpy(data, *source, bytes);
  storeRelease(box.taken, n);
  return okResult();
}

Result<void> Communicator::send(const void* data, std::size_t count, DataType type, int peer) {
  return p2p(true, const_cast<void*>(data), count, type, peer);
}

Result<void> Communicator::recv(void* data, std::size_t count, DataType type, int peer) {
  return p2p(false, data, count, type, peer);
}

}  // namespace torus::coll
