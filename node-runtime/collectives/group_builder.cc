#include "node-runtime/collectives/group_builder.h"

#include <algorithm>
#include <numeric>

#include "common/base/log.h"
#include "common/base/spin.h"
#include "node-runtime/collectives/bootstrap/bootstrap_link.h"
#include "node-runtime/collectives/net/hierarchical_group.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/shm/control_layout.h"
#include "node-runtime/collectives/shm/shm_group.h"

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

// A shared-memory group of `members` (ranks of the communicator `settings` describes).
ShmGroupOptions shmOptions(const GroupSettings& settings, std::uint64_t session,
                           const std::vector<int>& members) {
  ShmGroupOptions options;
  options.session = session;
  options.rank =
      static_cast<int>(std::find(members.begin(), members.end(), settings.rank) - members.begin());
  for (int r : members)
    options.ranks.push_back(settings.ranks[static_cast<std::size_t>(r)]);
  options.slotPath = settings.algorithm != Algorithm::kDirect;
  options.spin = settings.spin;
  return options;
}

// Rank 0 of a group to be makes its control segment; an error waits until after the barrier
// every member takes, so no member waits for one that gave up.
Result<void> controlIfFirst(bool first, std::uint64_t session, int size, ShmSegment& control) {
  if (!first) return okResult();
  auto made = ShmGroup::createControl(session, size);
  if (!made) return std::move(made).error();
  control = std::move(*made);
  return okResult();
}

}  // namespace

Result<std::unique_ptr<Groups>> GroupBuilder::build(GroupSettings settings, ShmSegment control,
                                                    std::shared_ptr<BootstrapLink> link,
                                                    const OfiOptions& ofi,
                                                    const std::string& context) {
  std::unique_ptr<Groups> groups(new Groups(std::move(settings)));  // private constructor
  const GroupSettings& s = groups->settings_;
  // Ranks on the same host share memory; anything else needs the libfabric transport.
  std::vector<int> remote;
  for (int r = 0; r < s.size(); ++r) {
    if (s.ranks[static_cast<std::size_t>(r)].hostId !=
        s.ranks[static_cast<std::size_t>(s.rank)].hostId) {
      remote.push_back(r);
    }
  }
  if (!remote.empty() && s.transport == Transport::kShm) {
    const RankInfo& first = s.ranks[static_cast<std::size_t>(remote.front())];
    std::string who = remote.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < remote.size(); ++i) {
      who += (i > 0 ? ", " : "") + std::to_string(remote[i]) + " (pid " +
             std::to_string(s.ranks[static_cast<std::size_t>(remote[i])].pid) + ")";
    }
    return makeError(ErrorCode::kFailedPrecondition,
                     context + ": " + who + " on another host (" + first.hostId +
                         ") and TORUS_COLL_TRANSPORT=shm allows shared memory only");
  }
  if (!remote.empty() || s.transport == Transport::kOfi) {
    if (control.data() != nullptr) control.unlinkNow();
    groups->link_ = std::move(link);  // null for a world of one
    if (auto built = buildNet(*groups, ofi, context); !built) return std::move(built).error();
    return groups;
  }
  if (auto built = buildShm(*groups, std::move(control), context); !built) {
    return std::move(built).error();
  }
  return groups;
}

Result<void> GroupBuilder::buildShm(Groups& groups, ShmSegment control,
                                    const std::string& context) {
  GroupSettings& s = groups.settings_;
  std::vector<int> everyone(static_cast<std::size_t>(s.size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  s.spin = s.size() <= usableCpus();
  groups.shm_ = std::make_unique<ShmGroup>(shmOptions(s, s.session, everyone));
  if (auto attached = groups.shm_->attach(std::move(control), context, s.timeout); !attached) {
    return attached;
  }
  groups.run_ = groups.shm_.get();
  TORUS_LOG_AT(s.rank == 0 ? log::Level::kInfo : log::Level::kDebug, Coll, "communicator ready",
               {"comm", s.name}, {"rank", s.rank}, {"size", s.size()}, {"transport", "shm"},
               {"spin", s.spin}, {"timeout_ms", s.timeout.count()});
  return okResult();
}

Result<void> GroupBuilder::buildNet(Groups& groups, const OfiOptions& ofi,
                                    const std::string& context) {
  GroupSettings& s = groups.settings_;
  groups.segments_.emplace(s.session, s.rank);
  auto endpoint = OfiEndpoint::open(ofi);
  if (!endpoint) return std::move(endpoint).error().withContext(context);
  groups.endpoint_ = std::move(*endpoint);
  OfiEndpoint& mine = *groups.endpoint_;
  Result<std::vector<std::string>> addresses = std::vector<std::string>{mine.address()};
  if (groups.link_) addresses = groups.link_->allGather(mine.address(), Clock::now() + s.timeout);
  if (!addresses) {
    return std::move(addresses).error().withContext(context + ": exchanging libfabric addresses");
  }
  TORUS_RETURN_IF_ERROR(mine.setPeers(*addresses), context);
  TORUS_RETURN_IF_ERROR(mine.warmUp(s.rank, Clock::now() + s.timeout), context);

  groups.hostOf_.assign(static_cast<std::size_t>(s.size()), 0);
  std::vector<std::string> hosts;
  for (int r = 0; r < s.size(); ++r) {
    const std::string& id = s.ranks[static_cast<std::size_t>(r)].hostId;
    auto it = std::find(hosts.begin(), hosts.end(), id);
    if (it == hosts.end()) it = hosts.insert(hosts.end(), id);
    groups.hostOf_[static_cast<std::size_t>(r)] = static_cast<int>(it - hosts.begin());
  }
  const HostLayout layout = layoutOf(groups.hostOf_, s.rank);
  // Spinning pays only while every rank on this machine has a CPU of its own.
  const auto onThisMachine = std::count_if(s.ranks.begin(), s.ranks.end(), [&](const RankInfo& r) {
    return r.machineId == s.ranks[static_cast<std::size_t>(s.rank)].machineId;
  });
  s.spin = onThisMachine <= usableCpus();
  groups.endpointRanks_.resize(static_cast<std::size_t>(s.size()));
  std::iota(groups.endpointRanks_.begin(), groups.endpointRanks_.end(), 0);
  groups.net_ =
      std::make_unique<NetGroup>(groups.endpoint_, groups.endpointRanks_, groups.endpointRanks_,
                                 s.rank, 0, s.spin, netAllReduceOf(s.algorithm));
  groups.run_ = groups.net_.get();
  if (groups.link_) {
    // From here on deaths and aborts travel while this rank is busy anywhere.
    groups.link_->startWatching();
    groups.net_->setLiveness([raw = &groups] { return raw->remoteTrouble(); });
  }
  groups.nextGroupId_ = 2;  // 0: every rank, 1: the column

  // Every rank takes part in building the hosts' shared-memory groups (a barrier over
  // libfabric), also a rank alone on its host.
  if (s.transport == Transport::kAuto && layout.hosts > 1 && layout.largestHost > 1) {
    const int myHost = groups.hostOf_[static_cast<std::size_t>(s.rank)];
    if (auto built = buildLocal(groups, layout.local, myHost, context); !built) return built;
    if (groups.local_ && layout.symmetric && s.algorithm != Algorithm::kFlat) {
      buildColumn(groups, layout.column, layout.columnIndex, 1);
    }
  }
  groups.useHierarchyWhenComplete();
  TORUS_LOG_AT(
      s.rank == 0 ? log::Level::kInfo : log::Level::kDebug, Coll, "communicator ready",
      {"comm", s.name}, {"rank", s.rank}, {"size", s.size()}, {"transport", groups.transportName()},
      {"provider", mine.provider()}, {"hosts", layout.hosts}, {"local_ranks", layout.local.size()},
      {"hierarchical", groups.hierarchical_ != nullptr}, {"timeout_ms", s.timeout.count()});
  return okResult();
}

Result<void> GroupBuilder::buildLocal(Groups& groups, const std::vector<int>& members,
                                      int hostIndex, const std::string& context) {
  const GroupSettings& s = groups.settings_;
  const auto what = [&] {
    return "creating the host groups of " + s.name + " (host " + std::to_string(hostIndex) + ")";
  };
  // Sequence 0 is never used by a collective, so this barrier's tags are its own.
  const GroupCall call{0, Clock::now() + s.timeout, s.timeout, what};
  if (members.size() == 1) return groups.net_->barrier(call);  // alone on this host: the barrier
  const std::uint64_t session =
      deriveSession(s.session, 0xffffffffULL, static_cast<std::uint64_t>(hostIndex));
  ShmGroupOptions options = shmOptions(s, session, members);
  options.labels = members;  // errors name the hostmates by their ranks in this communicator
  auto local = std::make_unique<ShmGroup>(std::move(options));
  ShmSegment control;
  Result<void> created = controlIfFirst(local->rank() == 0, session, local->size(), control);
  TORUS_RETURN_IF_ERROR(groups.net_->barrier(call), context);
  if (!created) return std::move(created).error().withContext(context);
  if (auto attached = local->attach(std::move(control), context + ": " + what(), s.timeout);
      !attached) {
    return attached;
  }
  // Its stages stop when the link hears of trouble on another host.
  local->setTrouble([raw = &groups] { return raw->remoteTrouble(); });
  groups.local_ = std::move(local);
  return okResult();
}

void GroupBuilder::buildColumn(Groups& groups, const std::vector<int>& column, int myIndex,
                               std::uint16_t groupId) {
  std::vector<int> endpoints;
  for (int r : column)
    endpoints.push_back(groups.endpointRanks_[static_cast<std::size_t>(r)]);
  groups.column_ =
      std::make_unique<NetGroup>(groups.endpoint_, std::move(endpoints), column, myIndex, groupId,
                                 groups.settings_.spin, netAllReduceOf(groups.settings_.algorithm));
  groups.column_->setLiveness([raw = &groups] { return raw->remoteTrouble(); });
}

Result<std::unique_ptr<Groups>> GroupBuilder::split(Groups& parent, const SplitRequest& request,
                                                    FunctionRef<Result<void>()> parentBarrier) {
  if (parent.net_) return splitNet(parent, request);
  return splitShm(request, parentBarrier);
}

Result<std::unique_ptr<Groups>> GroupBuilder::splitShm(const SplitRequest& request,
                                                       FunctionRef<Result<void>()> parentBarrier) {
  std::unique_ptr<Groups> child;
  ShmSegment control;
  Result<void> created = okResult();
  if (request.child) {
    child.reset(new Groups(*request.child));  // private constructor
    created = controlIfFirst(child->settings_.rank == 0, child->settings_.session,
                             child->settings_.size(), control);
  }
  // Every group's control segment exists after this barrier on the parent.
  TORUS_RETURN_IF_ERROR(parentBarrier(), request.context);
  if (!created) return std::move(created).error().withContext(request.context);
  if (!child) return child;
  const GroupSettings& s = child->settings_;
  const std::string context = "creating " + s.name + " (rank " + std::to_string(s.rank) + " of " +
                              std::to_string(s.size()) + ")";
  TORUS_RETURN_IF_ERROR(buildShm(*child, std::move(control), context), request.context);
  return child;
}

Result<std::unique_ptr<Groups>> GroupBuilder::splitNet(Groups& parent,
                                                       const SplitRequest& request) {
  const GroupSettings& p = parent.settings_;
  const std::vector<int>& members = *request.members;
  const int myHost = parent.hostOf_[static_cast<std::size_t>(p.rank)];
  // The host's group splits alongside: its members (all in this split call) agree on the new
  // host groups from the colors everyone already has, then meet once on the old host group.
  std::vector<int> localMembers;  // parent ranks on this host in my new group, by key
  for (int r : members) {
    if (parent.hostOf_[static_cast<std::size_t>(r)] == myHost) localMembers.push_back(r);
  }
  std::unique_ptr<ShmGroup> localChild;
  if (parent.local_) {
    const std::uint64_t localSession =
        deriveSession(parent.local_->session(), request.index,
                      static_cast<std::uint32_t>(std::max(request.color, 0)));
    ShmSegment control;
    Result<void> created = okResult();
    if (request.color >= 0 && localMembers.size() > 1) {
      localChild = std::make_unique<ShmGroup>(shmOptions(p, localSession, localMembers));
      created = controlIfFirst(localChild->rank() == 0, localSession, localChild->size(), control);
    }
    const auto what = [&] { return request.context + ": the host's groups"; };
    const GroupCall call{0, Clock::now() + p.timeout, p.timeout, what};
    TORUS_RETURN_IF_ERROR(parent.local_->barrier(call), request.context);
    if (!created) return std::move(created).error().withContext(request.context);
    if (localChild) {
      TORUS_RETURN_IF_ERROR(localChild->attach(std::move(control), what(), p.timeout),
                            request.context);
    }
  }
  if (!request.child) return std::unique_ptr<Groups>();
  int groupId = 0;
  for (int r : members)
    groupId = std::max(groupId, (*request.all)[3 * static_cast<std::size_t>(r) + 2]);
  parent.nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);

  std::unique_ptr<Groups> child(new Groups(*request.child));  // private constructor
  child->settings_.spin = p.spin;
  const bool oneHost = localMembers.size() == members.size();
  if (oneHost && localChild) {  // shared memory alone serves it
    child->shm_ = std::move(localChild);
    child->run_ = child->shm_.get();
    return child;
  }
  const GroupSettings& s = child->settings_;
  child->link_ = parent.link_;
  child->endpoint_ = parent.endpoint_;
  child->segments_.emplace(s.session, s.rank);
  for (int r : members) {
    child->endpointRanks_.push_back(parent.endpointRanks_[static_cast<std::size_t>(r)]);
    child->hostOf_.push_back(parent.hostOf_[static_cast<std::size_t>(r)]);
  }
  std::vector<int> labels(members.size());
  std::iota(labels.begin(), labels.end(), 0);
  child->net_ = std::make_unique<NetGroup>(
      child->endpoint_, child->endpointRanks_, std::move(labels), s.rank,
      static_cast<std::uint16_t>(groupId), s.spin, netAllReduceOf(s.algorithm));
  child->net_->setLiveness([raw = child.get()] { return raw->remoteTrouble(); });
  child->run_ = child->net_.get();
  child->nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);
  // Host numbers of the child: renumber so they start at 0 in order of first appearance.
  std::vector<int> renumber;
  for (int& host : child->hostOf_) {
    auto it = std::find(renumber.begin(), renumber.end(), host);
    if (it == renumber.end()) it = renumber.insert(renumber.end(), host);
    host = static_cast<int>(it - renumber.begin());
  }
  const HostLayout layout = layoutOf(child->hostOf_, s.rank);
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
    if (layout.symmetric && s.algorithm != Algorithm::kFlat) {
      buildColumn(*child, layout.column, layout.columnIndex,
                  static_cast<std::uint16_t>(groupId + 1));
    }
  }
  child->useHierarchyWhenComplete();
  return child;
}

}  // namespace torus::coll
