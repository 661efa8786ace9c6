// The communicator over libfabric: creation (endpoint, address exchange, the host's
// shared-memory communicator and the column group), running a collective on a NetGroup, the
// hierarchical AllReduce, and split. The algorithms are in net/net_algorithms.cc.
#include <algorithm>
#include <numeric>

#include "common/base/log.h"
#include "node-runtime/collectives/communicator.h"
#include "node-runtime/collectives/control_layout.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/ofi/ofi_endpoint.h"
#include "node-runtime/collectives/segment_registry.h"

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

// Chunk boundaries (elements) of `count` split over n parts.
std::size_t shardBegin(std::size_t count, int parts, int index) {
  const std::size_t per = count / static_cast<std::size_t>(parts);
  const std::size_t extra = count % static_cast<std::size_t>(parts);
  const auto i = static_cast<std::size_t>(index);
  return i * per + std::min(i, extra);
}

}  // namespace

Result<void> Communicator::setupNet(const CommOptions& options, std::shared_ptr<BootstrapLink> link,
                                    const std::string& context) {
  // Rank 0 made a shared-memory control segment before it knew where the ranks are.
  if (control_.data() != nullptr) {
    control_.unlinkNow();
    control_ = ShmSegment();
  }
  link_ = std::move(link);  // null for a world of one
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
  net_ = std::make_unique<NetGroup>(endpoint_, endpointRanks_, endpointRanks_, rank_, 0, spin_);
  if (link_) {
    // From here on deaths and aborts travel while this rank is busy anywhere.
    link_->startWatching();
    net_->setLiveness([this] { return remoteTrouble(); });
  }
  nextGroupId_ = 2;  // 0: every rank, 1: the column
  sent_.assign(static_cast<std::size_t>(size_), 0);
  received_.assign(static_cast<std::size_t>(size_), 0);

  // Every rank takes part in building the hosts' shared-memory communicators (a barrier over
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
  TORUS_LOG_AT(rank_ == 0 ? log::Level::kInfo : log::Level::kDebug, Coll, "communicator ready",
               {"comm", name_}, {"rank", rank_}, {"size", size_}, {"transport", transportName()},
               {"provider", endpoint_->provider()}, {"hosts", layout.hosts},
               {"local_ranks", layout.local.size()}, {"hierarchical", column_ != nullptr},
               {"timeout_ms", timeout_.count()});
  return okResult();
}

// The shared-memory communicator of this host's ranks, made like a split child: the host's
// lowest rank creates the control segment, a barrier over libfabric, then the others map it.
Result<void> Communicator::buildLocal(const std::vector<int>& members, int hostIndex,
                                      const std::string& context) {
  if (members.size() == 1) {  // alone on this host: only the barrier
    const auto what = [&] { return "creating the hosts' communicators of " + name_; };
    const NetCall call{0, Clock::now() + timeout_, timeout_, what};
    return net_->barrier(call);
  }
  std::unique_ptr<Communicator> local =
      childOf(members, name_ + "/host" + std::to_string(hostIndex),
              deriveSession(session_, 0xffffffffULL, static_cast<std::uint64_t>(hostIndex)));
  local->labels_ = members;
  Result<void> created = okResult();
  if (local->rank_ == 0) created = local->createControl(local->session_);
  const auto what = [&] { return "creating " + local->name_; };
  const NetCall call{0, Clock::now() + timeout_, timeout_, what};
  // Sequence 0 is never used by a collective, so this barrier's tags are its own.
  TORUS_RETURN_IF_ERROR(net_->barrier(call), context);
  if (!created) return std::move(created).error().withContext(context);
  if (auto attached = local->attachControl(context + ": " + what()); !attached) return attached;
  local->spin_ = spin_;  // hostmates may share this machine's cores with other "hosts"
  local_ = std::move(local);
  // Its shared-memory stages stop when the link hears of trouble on another host.
  local_->outerTrouble_ = [this] { return remoteTrouble(); };
  return okResult();
}

void Communicator::buildColumn(const std::vector<int>& column, int myIndex, std::uint16_t groupId) {
  std::vector<int> endpoints;
  for (int r : column)
    endpoints.push_back(endpointRanks_[static_cast<std::size_t>(r)]);
  column_ =
      std::make_unique<NetGroup>(endpoint_, std::move(endpoints), column, myIndex, groupId, spin_);
  column_->setLiveness([this] { return remoteTrouble(); });
}

RegistrationCounts Communicator::registrationCounts() const {
  return endpoint_ ? endpoint_->registrationCounts() : RegistrationCounts{};
}

std::optional<std::string> Communicator::remoteTrouble() const {
  if (outerTrouble_) return outerTrouble_();
  if (!link_ || !link_->anyTrouble()) return std::nullopt;
  if (const std::vector<int> dead = deadMembers(); !dead.empty()) {
    return "rank " + rankName(dead.front()) +
           " is gone (its bootstrap connection closed without a goodbye)";
  }
  if (auto aborted = link_->abortOf(session_)) {
    const auto it = std::find(endpointRanks_.begin(), endpointRanks_.end(), aborted->first);
    const int member =
        it == endpointRanks_.end() ? -1 : static_cast<int>(it - endpointRanks_.begin());
    return "rank " + (member < 0 ? std::to_string(aborted->first) : rankName(member)) +
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

Result<void> Communicator::runNet(OpKind op, FunctionRef<Result<void>(const NetCall&)> body) {
  TORUS_RETURN_IF_ERROR(checkCaller(opName(op)), "refused");
  OpDescriptor desc;
  desc.op = op;
  desc.sequence = sequence_ + 1;
  const auto what = [&] { return opContext(desc); };
  if (broken_) {
    return Error{broken_->code, what() + ": communicator is broken: " + broken_->message};
  }
  ++sequence_;
  const InFlightMark inFlight(status_.get(), waitPublished_, op, desc.sequence);
  const NetCall call{desc.sequence, Clock::now() + timeout_, timeout_, what};
  if (auto status = body(call); !status) return fail(std::move(status).error());
  return okResult();
}

// Hierarchical: AllReduce within the host over shared memory (every local rank then holds the
// host's sum), local rank k runs the inter-host AllReduce of shard k with its column, and each
// local rank broadcasts its finished shard to its hostmates. The network carries 1/L of the
// buffer per rank, and the L columns run side by side.
Result<void> Communicator::netAllReduce(const NetCall& call, const void* send, void* recv,
                                        std::size_t count, DataType type, ReduceOp op) {
  NetAllReduce flat = NetAllReduce::kAuto;
  if (algorithm_ == Algorithm::kRing) flat = NetAllReduce::kRing;
  if (algorithm_ == Algorithm::kRecursiveDoubling) flat = NetAllReduce::kRecursiveDoubling;
  if (!column_ || !local_) return net_->allReduce(call, send, recv, count, type, op, flat);

  const std::size_t elem = dataTypeSize(type);
  const int parts = local_->size();
  TORUS_LOG(Debug, Tuning, "algorithm chosen", {"comm", name_}, {"op", "allReduce"},
            {"bytes", count * elem}, {"algorithm", "hierarchical"}, {"local_ranks", parts});
  if (auto status = local_->allReduce(send, recv, count, type, op); !status) {
    return std::move(status).error().withContext(call.what() + ": host stage");
  }
  auto* out = static_cast<std::byte*>(recv);
  const int mine = local_->rank();
  const std::size_t begin = shardBegin(count, parts, mine);
  const std::size_t end = shardBegin(count, parts, mine + 1);
  if (auto status = column_->allReduce(call, out + begin * elem, out + begin * elem, end - begin,
                                       type, op, flat);
      !status) {
    return status;
  }
  for (int k = 0; k < parts; ++k) {
    const std::size_t first = shardBegin(count, parts, k);
    const std::size_t last = shardBegin(count, parts, k + 1);
    if (auto status =
            local_->broadcast(out + first * elem, out + first * elem, last - first, type, k);
        !status) {
      return std::move(status).error().withContext(call.what() + ": sharing shard " +
                                                   std::to_string(k) + " on the host");
    }
  }
  return okResult();
}

Result<std::unique_ptr<Communicator>> Communicator::splitNet(int color, int key,
                                                             const std::vector<std::int32_t>& all,
                                                             const std::vector<int>& members) {
  const std::string context = "split of " + name_;
  // The host's communicator splits alongside: a collective over this host's ranks, all of which
  // are in this split too.
  std::unique_ptr<Communicator> localChild;
  if (local_) {
    auto split = local_->split(color, key);
    if (!split) return std::move(split).error().withContext(context);
    localChild = std::move(*split);
  }
  if (color < 0) return std::unique_ptr<Communicator>();
  int groupId = 0;
  for (int r : members)
    groupId = std::max(groupId, all[3 * static_cast<std::size_t>(r) + 2]);
  nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);
  const bool oneHost = std::all_of(members.begin(), members.end(), [&](int r) {
    return hostOf_[static_cast<std::size_t>(r)] == hostOf_[static_cast<std::size_t>(rank_)];
  });
  if (oneHost && localChild) return localChild;  // shared memory alone serves it

  std::unique_ptr<Communicator> child =
      childOf(members, name_ + "/split" + std::to_string(splits_) + "." + std::to_string(color),
              deriveSession(session_, splits_, static_cast<std::uint32_t>(color)));
  child->spin_ = spin_;
  child->link_ = link_;
  child->endpoint_ = endpoint_;
  for (int r : members) {
    child->endpointRanks_.push_back(endpointRanks_[static_cast<std::size_t>(r)]);
    child->hostOf_.push_back(hostOf_[static_cast<std::size_t>(r)]);
  }
  std::vector<int> labels(members.size());
  std::iota(labels.begin(), labels.end(), 0);
  child->net_ =
      std::make_unique<NetGroup>(endpoint_, child->endpointRanks_, std::move(labels), child->rank_,
                                 static_cast<std::uint16_t>(groupId), spin_);
  child->net_->setLiveness([raw = child.get()] { return raw->remoteTrouble(); });
  child->nextGroupId_ = static_cast<std::uint16_t>(groupId + 2);
  child->sent_.assign(members.size(), 0);
  child->received_.assign(members.size(), 0);
  // Host numbers of the child: renumber so they start at 0 in order of first appearance.
  std::vector<int> renumber;
  for (int& host : child->hostOf_) {
    auto it = std::find(renumber.begin(), renumber.end(), host);
    if (it == renumber.end()) it = renumber.insert(renumber.end(), host);
    host = static_cast<int>(it - renumber.begin());
  }
  const HostLayout layout = layoutOf(child->hostOf_, child->rank_);
  if (localChild && localChild->size() > 1 && layout.hosts > 1) {
    child->local_ = std::move(localChild);
    child->local_->outerTrouble_ = [raw = child.get()] { return raw->remoteTrouble(); };
    if (layout.symmetric && algorithm_ != Algorithm::kFlat) {
      child->buildColumn(layout.column, layout.columnIndex,
                         static_cast<std::uint16_t>(groupId + 1));
    }
  }
  child->registerStatus();
  return child;
}

}  // namespace torus::coll
