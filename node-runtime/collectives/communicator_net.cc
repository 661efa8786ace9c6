// The communicator over libfabric: creation (endpoint, address exchange, the host's
// shared-memory group and the column group for the hierarchical AllReduce), liveness through the
// bootstrap link, and split. The algorithms are in net/.
#include <algorithm>
#include <numeric>

#include "common/base/log.h"
#include "common/base/spin.h"
#include "node-runtime/collectives/bootstrap/bootstrap_link.h"
#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/net/hierarchical_group.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/ofi/ofi_endpoint.h"
#include "node-runtime/collectives/shm/control_layout.h"

namespace torus::coll {
namespace {

// Where the ranks are: hosts numbered by their lowest rank, this rank's hostmates, and the
// column (the rank with this rank's local index on every host) when every host has as many.
struct HostLayout {
  int hosts = 0;
  std::vector<int> local;  // ranks on this rank's host, ascending
  std::size_t largestHost = 0;
  int localIndex = 0;
  bool symmetric = true;
  std::vector<int> column;  // ranks, by host
  int columnIndex = 0;
};

HostLayout layoutOf(const std::vector<int>& hostOf, int rank) {
  HostLayout layout;
  const int n = static_cast<int>(hostOf.size());
  layout.hosts = n == 0 ? 0 : *std::max_element(hostOf.begin(), hostOf.end()) + 1;
  std::vector<std::vector<int>> byHost(static_cast<std::size_t>(layout.hosts));
  for (int r = 0; r < n; ++r)
    byHost[static_cast<std::size_t>(hostOf[static_cast<std::size_t>(r)])].push_back(r);
  layout.local = byHost[static_cast<std::size_t>(hostOf[static_cast<std::size_t>(rank)])];
  layout.localIndex = static_cast<int>(std::find(layout.local.begin(), layout.local.end(), rank) -
                                       layout.local.begin());
  for (const auto& members : byHost) {
    if (members.size() != layout.local.size()) layout.symmetric = false;
    layout.largestHost = std::max(layout.largestHost, members.size());
  }
  if (layout.symmetric) {
    for (int h = 0; h < layout.hosts; ++h) {
      const int r =
          byHost[static_cast<std::size_t>(h)][static_cast<std::size_t>(layout.localIndex)];
      if (r == rank) layout.columnIndex = h;
      layout.column.push_back(r);
    }
  }
  return layout;
}

// AllReduce on a NetGroup: what TORUS_COLL_ALGO asked for, or the cost model.
NetAllReduce netAllReduceOf(Algorithm algorithm) {
  if (algorithm == Algorithm::kRing) return NetAllReduce::kRing;
  if (algorithm == Algorithm::kRecursiveDoubling) return NetAllReduce::kRecursiveDoubling;
  return NetAllReduce::kAuto;
}

}  // namespace

Result<void> Communicator::setupNet(const CommOptions& options, std::shared_ptr<BootstrapLink> link,
                                    const std::string& context) {
  link_ = std::move(link);  // null for a world of one
  segments_.emplace(session_, rank_);
  OfiOptions ofi;
  ofi.provider = options.ofiProvider;
  ofi.registerAlways = options.ofiRegisterAlways;
  auto endpoint = OfiEndpoint::open(ofi);
  if (!endpoint) return std::move(endpoint).error().withContext(context);
  endpoint_ = std::move(*endpoint);
  Result<std::vector<std::string>> addresses = std::vector<std::string>{endpoint_->address()};
  if (link_) addresses = link_->allGather(endpoint_->address(), Clock::now() + timeout_);
  if (!addresses) {
    return std::move(addresses).error().withContext(context + ": exchanging libfabric addresses");
  }
  TORUS_RETURN_IF_ERROR(endpoint_->setPeers(*addresses), context);
  TORUS_RETURN_IF_ERROR(endpoint_->warmUp(rank_, Clock::now() + timeout_), context);

  hostOf_.assign(static_cast<std::size_t>(size_), 0);
  std::vector<std::string> hosts;
  for (int r = 0; r < size_; ++r) {
    const std::string& id = ranks_[static_cast<std::size_t>(r)].hostId;
    auto it = std::find(hosts.begin(), hosts.end(), id);
    if (it == hosts.end()) it = hosts.insert(hosts.end(), id);
    hostOf_[static_cast<std::size_t>(r)] = static_cast<int>(it - hosts.begin());
  }
  const HostLayout layout = layoutOf(hostOf_, rank_);
  // Spinning pays only while every rank on this machine has a CPU of its own.
  const auto onThisMachine = std::count_if(ranks_.begin(), ranks_.end(), [&](const RankInfo& r) {
    return r.machineId == ranks_[static_cast<std::size_t>(rank_)].machineId;
  });
  spin_ = onThisMachine <= usableCpus();
  endpointRanks_.resize(static_cast<std::size_t>(size_));
  std::iota(endpointRanks_.begin(), endpointRanks_.end(), 0);
  net_ = std::make_unique<NetGroup>(endpoint_, endpointRanks_, endpointRanks_, rank_, 0, spin_,
                                    netAllReduceOf(algorithm_));
  group_ = net_.get();
  if (link_) {
    // From here on deaths and aborts travel while this rank is busy anywhere.
    link_->startWatching();
    net_->setLiveness([this] { return remoteTrouble(); });
  }
  nextGroupId_ = 2;  // 0: every rank, 1: the column

  // Every rank takes part in building the hosts' shared-memory groups (a barrier over
  // libfabric), also a rank alone on its host.
  if (transport_ == Transport::kAuto && layout.hosts > 1 && layout.largestHost > 1) {
    if (auto built = buildLocal(layout.local, hostOf_[static_cast<std::size_t>(rank_)], context);
        !built) {
      return built;
    }
    if (local_ && layout.symmetric && algorithm_ != Algorithm::kFlat) {
      buildColumn(layout.column, layout.columnIndex, 1);
    }
  }
  registerStatus();
  if (local_) local_->setStatus(status_.get(), &waitPublished_);
  useHierarchyWhenComplete();
  TORUS_LOG_AT(rank_ == 0 ? log::Level::kInfo : log::Level::kDebug, Coll, "communicator ready",
               {"comm", name_}, {"rank", rank_}, {"size", size_}, {"transport", transportName()},
               {"provider", endpoint_->provider()}, {"hosts", layout.hosts},
               {"local_ranks", layout.local.size()}, {"hierarchical", hierarchical_ != nullptr},
               {"timeout_ms", timeout_.count()});
  return okResult();
}

// The shared-memory group of this host's ranks: the host's lowest rank creates the control
// segment, a barrier over libfabric, then the others map it.
Result<void> Communicator::buildLocal(const std::vector<int>& members, int hostIndex,
                                      const std::string& context) {
  const auto what = [&] {
    return "creating the host groups of " + name_ + " (host " + std::to_string(hostIndex) + ")";
  };
  // Sequence 0 is never used by a collective, so this barrier's tags are its own.
  const GroupCall call{0, Clock::now() + timeout_, timeout_, what};
  if (members.size() == 1) return net_->barrier(call);  // alone on this host: only the barrier
  const std::uint64_t session =
      deriveSession(session_, 0xffffffffULL, static_cast<std::uint64_t>(hostIndex));
  ShmGroupOptions options = shmOptions(session, members);
  options.labels = members;  // errors name the hostmates by their ranks in this communicator
  auto local = std::make_unique<ShmGroup>(std::move(options));
  ShmSegment control;
  Result<void> created = okResult();
  if (local->rank() == 0) {
    auto made = ShmGroup::createControl(session, local->size());
    if (made) {
      control = std::move(*made);
    } else {
      created = std::move(made).error();
    }
  }
  TORUS_RETURN_IF_ERROR(net_->barrier(call), context);
  if (!created) return std::move(created).error().withContext(context);
  if (auto attached = local->attach(std::move(control), context + ": " + what(), timeout_);
      !attached) {
    return attached;
  }
  // Its stages stop when the link hears of trouble on another host.
  local->setTrouble([this] { return remoteTrouble(); });
  local_ = std::move(local);
  return okResult();
}

void Communicator::buildColumn(const std::vector<int>& column, int myIndex, std::uint16_t groupId) {
  std::vector<int> endpoints;
  for (int r : column)
    endpoints.push_back(endpointRanks_[static_cast<std::size_t>(r)]);
  column_ = std::make_unique<NetGroup>(endpoint_, std::move(endpoints), column, myIndex, groupId,
                                       spin_, netAllReduceOf(algorithm_));
  column_->setLiveness([this] { return remoteTrouble(); });
}

// With a host group and a column, AllReduce runs hierarchically; everything else stays on the
// group of every rank.
void Communicator::useHierarchyWhenComplete() {
  if (!net_ || !local_ || !column_) return;
  hierarchical_ = std::make_unique<HierarchicalGroup>(*net_, *local_, *column_);
  group_ = hierarchical_.get();
}

RegistrationCounts Communicator::registrationCounts() const {
  return endpoint_ ? endpoint_->registrationCounts() : RegistrationCounts{};
}

std::optional<std::string> Communicator::remoteTrouble() const {
  if (!link_ || !link_->anyTrouble()) return std::nullopt;
  if (const std::vector<int> dead = deadMembers(); !dead.empty()) {
    return "rank " + std::to_string(dead.front()) +
           " is gone (its bootstrap connection closed without a goodbye)";
  }
  if (auto aborted = link_->abortOf(session_)) {
    const auto it = std::find(endpointRanks_.begin(), endpointRanks_.end(), aborted->first);
    const int member =
        it == endpointRanks_.end() ? -1 : static_cast<int>(it - endpointRanks_.begin());
    return "rank " + std::to_string(member < 0 ? aborted->first : member) +
           " gave up: " + aborted->second;
  }
  return std::nullopt;
}

std::vector<int> Communicator::deadMembers() const {
  std::vector<int> dead;
  if (!link_) return dead;
  for (int endpointRank : link_->deadRanks()) {
    const auto it = std::find(endpointRanks_.begin(), endpointRanks_.end(), endpointRank);
    if (it != endpointRanks_.end()) dead.push_back(static_cast<int>(it - endpointRanks_.begin()));
  }
  return dead;
}

Result<std::unique_ptr<Communicator>> Communicator::splitNet(int color,
                                                             const std::vector<std::int32_t>& all,
                                                             const std::vector<int>& members) {
  const std::string context = "split of " + name_;
  const int myHost = hostOf_[static_cast<std::size_t>(rank_)];
  // The host's group splits alongside: its members (all in this split call) agree on the new
  // host groups from the colors everyone already has, then meet once on the old host group.
  std::vector<int> localMembers;  // communicator ranks on this host in my new group, by key
  for (int r : members) {
    if (hostOf_[static_cast<std::size_t>(r)] == myHost) localMembers.push_back(r);
  }
  std::unique_ptr<ShmGroup> localChild;
  if (local_) {
    const std::uint64_t localSession =
        deriveSession(local_->session(), splits_, static_cast<std::uint32_t>(std::max(color, 0)));
    ShmSegment control;
    Result<void> created = okResult();
    if (color >= 0 && localMembers.size() > 1) {
      localChild = std::make_unique<ShmGroup>(shmOptions(localSession, localMembers));
      if (localChild->rank() == 0) {
        auto made = ShmGroup::createControl(localSession, localChild->size());
        if (made) {
          control = std::move(*made);
        } else {
          created = std::move(made).error();
        }
      }
    }
    const auto what = [&] { return context + ": the host's groups"; };
    const GroupCall call{0, Clock::now() + timeout_, timeout_, what};
    TORUS_RETURN_IF_ERROR(local_->barrier(call), context);
    if (!created) return std::move(created).error().withContext(context);
    if (localChild) {
      TORUS_RETURN_IF_ERROR(localChild->attach(std::move(control), what(), timeout_), context);
    }
  }
  if (color < 0) return std::unique_ptr<Communicator>();
  int groupId = 0;
  for (int r : members)
    groupId = std::max(groupId, all[3 * static_cast<std::size_t>(r) + 2]);
  nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);

  std::unique_ptr<Communicator> child =
      childOf(members, name_ + "/split" + std::to_string(splits_) + "." + std::to_string(color),
              deriveSession(session_, splits_, static_cast<std::uint32_t>(color)));
  const bool oneHost = localMembers.size() == members.size();
  if (oneHost && localChild) {  // shared memory alone serves it
    child->shm_ = std::move(localChild);
    child->group_ = child->shm_.get();
    child->registerStatus();
    child->shm_->setStatus(child->status_.get(), &child->waitPublished_);
    return child;
  }
  child->link_ = link_;
  child->endpoint_ = endpoint_;
  child->segments_.emplace(child->session_, child->rank_);
  for (int r : members) {
    child->endpointRanks_.push_back(endpointRanks_[static_cast<std::size_t>(r)]);
    child->hostOf_.push_back(hostOf_[static_cast<std::size_t>(r)]);
  }
  std::vector<int> labels(members.size());
  std::iota(labels.begin(), labels.end(), 0);
  child->net_ = std::make_unique<NetGroup>(endpoint_, child->endpointRanks_, std::move(labels),
                                           child->rank_, static_cast<std::uint16_t>(groupId), spin_,
                                           netAllReduceOf(algorithm_));
  child->net_->setLiveness([raw = child.get()] { return raw->remoteTrouble(); });
  child->group_ = child->net_.get();
  child->nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);
  // Host numbers of the child: renumber so they start at 0 in order of first appearance.
  std::vector<int> renumber;
  for (int& host : child->hostOf_) {
    auto it = std::find(renumber.begin(), renumber.end(), host);
    if (it == renumber.end()) it = renumber.insert(renumber.end(), host);
    host = static_cast<int>(it - renumber.begin());
  }
  const HostLayout layout = layoutOf(child->hostOf_, child->rank_);
  if (localChild && layout.hosts > 1) {
    // The host group names its members by their ranks in the child.
    std::vector<int> childLabels;
    for (int r : localMembers) {
      childLabels.push_back(
          static_cast<int>(std::find(members.begin(), members.end(), r) - members.begin()));
    }
    localChild->setLabels(std::move(childLabels));
    localChild->setTrouble([raw = child.get()] { return raw->remoteTrouble(); });
    child->local_ = std::move(localChild);
    if (layout.symmetric && algorithm_ != Algorithm::kFlat) {
      child->buildColumn(layout.column, layout.columnIndex,
                         static_cast<std::uint16_t>(groupId + 1));
    }
  }
  child->registerStatus();
  if (child->local_) child->local_->setStatus(child->status_.get(), &child->waitPublished_);
  child->useHierarchyWhenComplete();
  return child;
}

}  // namespace torus::coll
