// Communicator creation: options from the environment, the bootstrap, and split into
// sub-communicators; the groups for either come from group_builder.h.
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/group_builder.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_group.h"

namespace torus::coll {

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

namespace {

// Every environment variable a communicator reads, declared once: its name and how it sets the
// options. docs/config.md's collectives table is checked against this list (data_type_test.cc).
// TORUS_COLL_LIBFABRIC is not here: it picks the library once per process (fabric_library.h).
struct EnvironmentSetting {
  std::string_view name;
  Result<void> (*apply)(std::string_view value, CommOptions& options);
};

constexpr EnvironmentSetting kEnvironment[] = {
    {"NEURON_RT_ROOT_COMM_ID",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       options.rootAddress = std::string(value);
       return okResult();
     }},
    {"TORUS_COLL_TIMEOUT_MS",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       auto millis = parseInt64(value, 1, std::int64_t{24} * 3600 * 1000);
       if (!millis) return std::move(millis).error();
       options.timeout = std::chrono::milliseconds(*millis);
       return okResult();
     }},
    {"TORUS_COLL_JOB_SECRET",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       options.jobSecret = std::string(value);
       return okResult();
     }},
    {"TORUS_COLL_ALGO",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       auto parsed = parseAlgorithm(value);
       if (!parsed) return std::move(parsed).error();
       options.algorithm = *parsed;
       return okResult();
     }},
    {"TORUS_COLL_TRANSPORT",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       auto parsed = parseTransport(value);
       if (!parsed) return std::move(parsed).error();
       options.transport = *parsed;
       return okResult();
     }},
    {"TORUS_COLL_HOST_ID",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       options.hostId = std::string(value);
       for (char& c : options.hostId) {
         if (c == ' ' || c == '\t' || c == '\n') c = '_';  // one token on the bootstrap wire
       }
       return okResult();
     }},
    {"TORUS_COLL_OFI_REGISTER",
     [](std::string_view value, CommOptions& options) -> Result<void> {
       auto parsed = parseOfiRegister(value);
       if (!parsed) return std::move(parsed).error();
       options.ofiRegisterAlways = *parsed;
       return okResult();
     }},
};

}  // namespace

std::vector<std::string_view> environmentVariables() {
  std::vector<std::string_view> names;
  for (const EnvironmentSetting& setting : kEnvironment)
    names.push_back(setting.name);
  return names;
}

Result<void> applyEnvironment(CommOptions& options) {
  for (const EnvironmentSetting& setting : kEnvironment) {
    const char* value = std::getenv(std::string(setting.name).c_str());
    if (value == nullptr || *value == '\0') continue;
    TORUS_RETURN_IF_ERROR(setting.apply(value, options), setting.name);
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
  const std::string displayName = name_.empty() ? "comm@" + options.rootAddress : name_;

  // Rank 0 makes the shared-memory control segment as soon as the session is known, so the
  // others can map it right after the bootstrap; it goes again if the ranks span hosts.
  ShmSegment control;
  BootstrapRequest request;
  request.rank = options.rank;
  request.size = options.size;
  request.rootAddress = options.rootAddress;
  request.commName = displayName;
  request.rootListener = std::move(options.rootListener);
  request.hostId = options.hostId;
  request.jobSecret = options.jobSecret;
  request.deadline = Clock::now() + timeout_;
  request.onSessionReady = [this, &control](std::uint64_t session) -> Result<void> {
    auto made = ShmGroup::createControl(session, size_);
    if (!made) return std::move(made).error();
    control = std::move(*made);
    return okResult();
  };
  auto boot = bootstrap(std::move(request));
  if (!boot) return std::move(boot).error();
  session_ = boot->session;
  ranks_ = std::move(boot->ranks);
  if (name_.empty()) name_ = "comm-" + hex(session_).substr(8);
  sent_.assign(static_cast<std::size_t>(size_), 0);
  received_.assign(static_cast<std::size_t>(size_), 0);
  const std::string context = "creating " + name_ + " (rank " + std::to_string(rank_) + " of " +
                              std::to_string(size_) + ")";
  OfiOptions ofi;
  ofi.provider = options.ofiProvider;
  ofi.registerAlways = options.ofiRegisterAlways;
  auto groups =
      GroupBuilder::build(groupSettings(), std::move(control), std::move(boot->link), ofi, context);
  if (!groups) return std::move(groups).error();
  useGroups(std::move(*groups));
  return okResult();
}

GroupSettings Communicator::groupSettings() const {
  GroupSettings settings;
  settings.rank = rank_;
  settings.name = name_;
  settings.session = session_;
  settings.ranks = ranks_;
  settings.timeout = timeout_;
  settings.algorithm = algorithm_;
  settings.transport = transport_;
  return settings;
}

void Communicator::useGroups(std::unique_ptr<Groups> groups) {
  groups_ = std::move(groups);
  status_ = std::make_shared<CommStatus>();
  status_->name = name_;
  status_->rank = rank_;
  status_->size = size_;
  for (const RankInfo& info : ranks_)
    status_->pids.push_back(info.pid);
  statusRegistration_.emplace(status_);
  groups_->publishTo(status_.get(), &waitPublished_);
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::childOf(const std::vector<int>& members,
                                                    std::string name, std::uint64_t session) const {
  std::unique_ptr<Communicator> child(new Communicator());  // private constructor
  child->size_ = static_cast<int>(members.size());
  child->rank_ =
      static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  child->timeout_ = timeout_;
  child->algorithm_ = algorithm_;
  child->transport_ = transport_;
  child->name_ = std::move(name);
  child->session_ = session;
  for (int r : members)
    child->ranks_.push_back(ranks_[static_cast<std::size_t>(r)]);
  child->sent_.assign(members.size(), 0);
  child->received_.assign(members.size(), 0);
  return child;
}

std::string Communicator::transportName() const {
  return groups_->transportName();
}

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key) {
  TORUS_RETURN_IF_ERROR(checkCaller("split"), "refused");
  // Everyone learns everyone's (color, key, first free tag group) in one small AllGather.
  const std::int32_t mine[3] = {color, key, groups_->nextGroupId()};
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
  std::unique_ptr<Communicator> child;
  SplitRequest request;
  request.color = color;
  request.index = splitIndex;
  request.all = &all;
  request.members = &members;
  if (color >= 0) {
    // Same session on every member, different for every group and split.
    child = childOf(members,
                    name_ + "/split" + std::to_string(splitIndex) + "." + std::to_string(color),
                    deriveSession(session_, splitIndex, static_cast<std::uint32_t>(color)));
    request.child = child->groupSettings();
  }
  request.context = "split of " + name_;
  auto groups = GroupBuilder::split(*groups_, request, [this] { return barrier(); });
  if (!groups) return std::move(groups).error();
  if (!child) return child;
  child->useGroups(std::move(*groups));
  return child;
}

Result<Buffer> Communicator::allocate(std::size_t bytes) {
  return groups_->allocate(bytes);
}

RegistrationCounts Communicator::registrationCounts() const {
  return groups_->registrationCounts();
}

}  // namespace torus::coll
