#include "node-runtime/collectives/groups.h"

#include <algorithm>

#include "node-runtime/collectives/bootstrap/bootstrap_link.h"
#include "node-runtime/collectives/net/hierarchical_group.h"
#include "node-runtime/collectives/net/net_group.h"
#include "node-runtime/collectives/shm/shm_group.h"

namespace torus::coll {

Groups::Groups(GroupSettings settings) : settings_(std::move(settings)) {}

Groups::~Groups() {
  // Last chance: a hostmate killed during the final call may have exited only by now.
  unlinkSegmentsOfTheDead();
}

std::string Groups::transportName() const {
  if (!net_) return "shm";
  return hierarchical_ ? "shm+ofi" : "ofi";
}

Result<Buffer> Groups::allocate(std::size_t bytes) {
  // The host's shared-memory group owns the tensors, so its collectives (the hierarchical
  // AllReduce's local stages too) find them; over libfabric they are also registered once, for
  // all their transfers, when the provider needs registration.
  ShmGroup* host = shm_ ? shm_.get() : local_.get();
  // Without a host group (every rank over libfabric) the tensors are this rank's own segments,
  // which every libfabric build makes.
  Result<Buffer> buffer = host != nullptr ? host->allocate(bytes, settings_.name)
                                          : segments_->allocate(bytes, settings_.name);
  if (!buffer || !endpoint_) return buffer;
  auto registration = endpoint_->registerRegion(buffer->data(), buffer->size());
  if (!registration) {
    return std::move(registration)
        .error()
        .withContext("registering a " + std::to_string(bytes) + "-byte tensor on " +
                     settings_.name);
  }
  buffer->registration_ = std::move(*registration);
  return buffer;
}

RegistrationCounts Groups::registrationCounts() const {
  return endpoint_ ? endpoint_->registrationCounts() : RegistrationCounts{};
}

void Groups::publishTo(CommStatus* status, bool* waitPublished) {
  if (shm_) shm_->setStatus(status, waitPublished);
  if (local_) local_->setStatus(status, waitPublished);
}

std::optional<std::string> Groups::remoteTrouble() const {
  if (!link_ || !link_->anyTrouble()) return std::nullopt;
  if (const std::vector<int> dead = deadMembers(); !dead.empty()) {
    return "rank " + std::to_string(dead.front()) +
           " is gone (its bootstrap connection closed without a goodbye)";
  }
  if (auto aborted = link_->abortOf(settings_.session)) {
    const auto it = std::find(endpointRanks_.begin(), endpointRanks_.end(), aborted->first);
    const int member =
        it == endpointRanks_.end() ? -1 : static_cast<int>(it - endpointRanks_.begin());
    return "rank " + std::to_string(member < 0 ? aborted->first : member) +
           " gave up: " + aborted->second;
  }
  return std::nullopt;
}

std::vector<int> Groups::deadMembers() const {
  std::vector<int> dead;
  if (!link_) return dead;
  for (int endpointRank : link_->deadRanks()) {
    const auto it = std::find(endpointRanks_.begin(), endpointRanks_.end(), endpointRank);
    if (it != endpointRanks_.end()) dead.push_back(static_cast<int>(it - endpointRanks_.begin()));
  }
  return dead;
}

void Groups::abort(const std::string& message) {
  if (shm_) shm_->markAborted(message);
  if (local_) local_->markAborted(message);
  if (link_ && !link_->anyTrouble()) {
    link_->announceAbort(settings_.session, settings_.rank, message);
  }
  unlinkSegmentsOfTheDead();
}

void Groups::unlinkSegmentsOfTheDead() const {
  // A killed hostmate cannot remove its segments. The failure may reach this rank (its bootstrap
  // connection closing, another host's abort) before any wait here saw the exit, or even before
  // its pidfd reads ready: remove the segments of every member whose process has exited, and of
  // every hostmate the link saw go.
  if (shm_) shm_->unlinkSegmentsOfExited();
  if (local_) local_->unlinkSegmentsOfExited();
  if (!link_) return;
  const std::string& myHost = settings_.ranks[static_cast<std::size_t>(settings_.rank)].hostId;
  for (const int r : deadMembers()) {
    const RankInfo& member = settings_.ranks[static_cast<std::size_t>(r)];
    if (member.hostId != myHost) continue;
    if (segments_) segments_->unlinkOwnedBy(r);
    if (local_) local_->unlinkSegmentsOfProcess(member.pid);
  }
}

void Groups::useHierarchyWhenComplete() {
  if (!net_ || !local_ || !column_) return;
  hierarchical_ = std::make_unique<HierarchicalGroup>(*net_, *local_, *column_);
  run_ = hierarchical_.get();
}

}  // namespace torus::coll
