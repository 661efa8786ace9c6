// Communicator creation: options from the environment, bootstrap, the control segment, split
// into sub-communicators, and this rank's own segments. The data path is in communicator.cc.
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
#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/control_layout.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/segment_registry.h"
#include "node-runtime/collectives/status.h"

namespace torus::coll {

Buffer::~Buffer() {
  if (registry_ && id_ != 0) registry_->remove(id_);
}

Result<Algorithm> parseAlgorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kDirect, Algorithm::kRing,
                      Algorithm::kRecursiveDoubling, Algorithm::kFlat}) {
    if (text == algorithmName(a)) return a;
  }
  return makeError(ErrorCode::kInvalidArgument,
                   "unknown algorithm \"" + std::string(text) +
                       "\" (expected auto, direct, ring, doubling or flat)");
}

std::string_view algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kRecursiveDoubling:
      return "doubling";
    case Algorithm::kFlat:
      return "flat";
  }
  return "?";
}

Result<Transport> parseTransport(std::string_view text) {
  if (text == "auto") return Transport::kAuto;
  if (text == "shm") return Transport::kShm;
  if (text == "ofi") return Transport::kOfi;
  return makeError(ErrorCode::kInvalidArgument,
                   "unknown transport \"" + std::string(text) + "\" (expected auto, shm or ofi)");
}

Result<bool> parseOfiRegister(std::string_view text) {
  if (text == "always") return true;
  if (text == "auto") return false;
  return makeError(ErrorCode::kInvalidArgument,
                   "expected always or auto, got \"" + std::string(text) + "\"");
}

Result<void> applyEnvironment(CommOptions& options) {
  if (const char* algo = std::getenv("TORUS_COLL_ALGO"); algo != nullptr && *algo) {
    auto parsed = parseAlgorithm(algo);
    if (!parsed) return std::move(parsed).error().withContext("TORUS_COLL_ALGO");
    options.algorithm = *parsed;
  }
  if (const char* transport = std::getenv("TORUS_COLL_TRANSPORT");
      transport != nullptr && *transport) {
    auto parsed = parseTransport(transport);
    if (!parsed) return std::move(parsed).error().withContext("TORUS_COLL_TRANSPORT");
    options.transport = *parsed;
  }
  if (const char* host = std::getenv("TORUS_COLL_HOST_ID"); host != nullptr && *host) {
    options.hostId = host;
    for (char& c : options.hostId) {
      if (c == ' ' || c == '\t' || c == '\n') c = '_';  // one token on the bootstrap wire
    }
  }
  if (const char* registration = std::getenv("TORUS_COLL_OFI_REGISTER");
      registration != nullptr && *registration) {
    auto parsed = parseOfiRegister(registration);
    if (!parsed) return std::move(parsed).error().withContext("TORUS_COLL_OFI_REGISTER");
    options.ofiRegisterAlways = *parsed;
  }
  if (const char* secret = std::getenv("TORUS_COLL_JOB_SECRET"); secret != nullptr && *secret) {
    options.jobSecret = secret;
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

// A session id every member derives alike, different for every (a, b): splitmix64 of both.
std::uint64_t deriveSession(std::uint64_t session, std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = session ^ (a << 32) ^ b;
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) | 1U;
}

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
  algorithm_ = options.algorithm;
  transport_ = options.transport;
  slotPath_ = options.algorithm != Algorithm::kDirect;
  registry_ = std::make_shared<SegmentRegistry>();
  scratch_.resize(kBlockBytes);
  const std::string displayName = name_.empty() ? "comm@" + options.rootAddress : name_;

  BootstrapRequest request;
  request.rank = options.rank;
  request.size = options.size;
  request.rootAddress = options.rootAddress;
  request.commName = displayName;
  request.rootListener = std::move(options.rootListener);
  request.hostId = options.hostId;
  request.jobSecret = options.jobSecret;
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
  if (!remote.empty() && transport_ == Transport::kShm) {
    return makeError(ErrorCode::kFailedPrecondition,
                     context + ": " + rankList(remote) + " on another host (" +
                         ranks_[static_cast<std::size_t>(remote.front())].hostId +
                         ") and TORUS_COLL_TRANSPORT=shm allows shared memory only");
  }
  if (!remote.empty() || transport_ == Transport::kOfi) {
    return setupNet(options, std::move(boot->link), context);
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
  TORUS_RETURN_IF_ERROR(meet("setup"), context);
  control_.unlinkNow();
  registerStatus();
  TORUS_LOG_AT(rank_ == 0 ? log::Level::kInfo : log::Level::kDebug, Coll, "communicator ready",
               {"comm", name_}, {"rank", rank_}, {"size", size_}, {"transport", "shm"},
               {"spin", spin_}, {"timeout_ms", timeout_.count()});
  return okResult();
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::childOf(const std::vector<int>& members,
                                                    std::string name, std::uint64_t session) const {
  std::unique_ptr<Communicator> child(new Communicator());  // private constructor
  child->size_ = static_cast<int>(members.size());
  child->rank_ =
      static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  child->timeout_ = timeout_;
  child->slotPath_ = slotPath_;
  child->algorithm_ = algorithm_;
  child->transport_ = transport_;
  child->name_ = std::move(name);
  child->registry_ = std::make_shared<SegmentRegistry>();
  child->scratch_.resize(kBlockBytes);
  child->session_ = session;
  for (int r : members)
    child->ranks_.push_back(ranks_[static_cast<std::size_t>(r)]);
  return child;
}

void Communicator::registerStatus() {
  status_ = std::make_shared<CommStatus>();
  status_->name = name_;
  status_->rank = rank_;
  status_->size = size_;
  for (const RankInfo& info : ranks_)
    status_->pids.push_back(info.pid);
  statusRegistration_.emplace(status_);
}

std::string Communicator::transportName() const {
  if (!net_) return "shm";
  return local_ ? "shm+ofi" : "ofi";
}

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key) {
  TORUS_RETURN_IF_ERROR(checkCaller("split"), "refused");
  // Everyone learns everyone's (color, key, first free tag group) in one small AllGather.
  const std::int32_t mine[3] = {color, key, nextGroupId_};
  std::vector<std::int32_t> all(3 * static_cast<std::size_t>(size_));
  TORUS_RETURN_IF_ERROR(allGather(mine, all.data(), 3, DataType::kI32),
                        "split of " + name_ + ": exchanging colors");
  const std::uint64_t splitIndex = ++splits_;
  std::vector<int> members;  // parent ranks in my group, ordered by (key, parent rank)
  if (color >= 0) {
    for (int r = 0; r < size_; ++r) {
      if (all[3 * static_cast<std::size_t>(r)] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return all[3 * static_cast<std::size_t>(a) + 1] < all[3 * static_cast<std::size_t>(b) + 1];
    });
  }
  if (net_) return splitNet(color, key, all, members);
  std::unique_ptr<Communicator> child;
  Result<void> created = okResult();
  if (color >= 0) {
    // Same session on every member, different for every group and split.
    child = childOf(members,
                    name_ + "/split" + std::to_string(splitIndex) + "." + std::to_string(color),
                    deriveSession(session_, splitIndex, static_cast<std::uint32_t>(color)));
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
    out += rankName(ranks[i]);
    if (ranks_.size() > static_cast<std::size_t>(ranks[i])) {
      out += " (pid " + std::to_string(ranks_[static_cast<std::size_t>(ranks[i])].pid) + ")";
    }
  }
  return out;
}

Result<Buffer> Communicator::allocate(std::size_t bytes) {
  // The host's shared-memory communicator owns the tensors, so its collectives (the
  // hierarchical AllReduce's local stages) find them; over libfabric they are also registered
  // once, for all their transfers, when the provider needs registration.
  Result<Buffer> buffer = local_ ? local_->allocate(bytes) : allocateShared(bytes);
  if (!buffer || !endpoint_) return buffer;
  auto registration = endpoint_->registerRegion(buffer->data(), buffer->size());
  if (!registration) {
    return std::move(registration)
        .error()
        .withContext("registering a " + std::to_string(bytes) + "-byte tensor on " + name_);
  }
  buffer->registration_ = std::move(*registration);
  return buffer;
}

Result<Buffer> Communicator::allocateShared(std::size_t bytes) {
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

}  // namespace torus::coll
