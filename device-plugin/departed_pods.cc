#include "device-plugin/departed_pods.h"

#include <algorithm>

#include "common/base/log.h"

namespace torus::plugin {

void DepartedPods::listed(const topology::Node& node, const std::vector<Holder>& holders) {
  std::map<std::string, Tenant> now;
  for (const Holder& holder : holders) {
    now[holder.pod].cores |= coresOfIds(holder.kind, node, holder.ids);
  }
  std::lock_guard lock(mutex_);
  for (auto& [pod, tenant] : now) {
    const auto before = listed_.find(pod);
    // Asked on every List: the pod watch may not have had the pod when it was first listed.
    if (auto uid = uidOf_ ? uidOf_(pod) : std::nullopt; uid) {
      tenant.uid = *uid;
    } else if (before != listed_.end()) {
      tenant.uid = before->second.uid;
    }
  }
  // Listed again under the same UID: it had not departed. Two feeds of different age reach this
  // (the poll's Lists and the fresh List before each start); an older one may have left it out.
  std::erase_if(departed_, [&](const Departed& d) {
    const auto back = now.find(d.pod);
    return back != now.end() && !d.tenant.uid.empty() && back->second.uid == d.tenant.uid;
  });
  for (auto& entry : listed_) {
    // Named, not a structured binding: clang 14 refuses a lambda that captures one.
    const std::string& pod = entry.first;
    Tenant& tenant = entry.second;
    const auto after = now.find(pod);
    const bool gone = after == now.end() || (!tenant.uid.empty() && !after->second.uid.empty() &&
                                             after->second.uid != tenant.uid);
    if (!gone) continue;
    const bool known = std::ranges::any_of(
        departed_, [&](const Departed& d) { return d.pod == pod && d.tenant.uid == tenant.uid; });
    if (known) continue;
    if (departed_.size() >= kRemembered) departed_.erase(departed_.begin());
    departed_.push_back({pod, std::move(tenant)});
  }
  listed_ = std::move(now);
}

Result<void> DepartedPods::checkNoneRunsOn(const topology::Node& node,
                                           const topology::CoreSet& cores) {
  const topology::DeviceSet devices = node.devicesOfCores(cores);
  std::vector<Departed> candidates;
  {
    std::lock_guard lock(mutex_);
    for (const Departed& departed : departed_) {
      if (!(node.devicesOfCores(departed.tenant.cores) & devices).empty()) {
        candidates.push_back(departed);
      }
    }
  }
  for (const Departed& departed : candidates) {
    if (departed.tenant.uid.empty()) {
      // Never seen by the pod watch (no API access, or gone before it listed): nothing to look
      // for, so it cannot hold anything back.
      TORUS_LOG(Debug, Plugin, "a departed pod's UID is unknown; not waiting for it",
                {"pod", departed.pod}, {"cores", departed.tenant.cores.toRangeString()});
      continue;
    }
    auto runs = stillRuns_(departed.tenant.uid);
    if (!runs) {
      return makeError(ErrorCode::kUnavailable,
                       "cannot tell whether pod " + departed.pod + ", which held cores " +
                           departed.tenant.cores.toRangeString() + ", still runs here (" +
                           runs.error().message +
                           "); the container is not started until it can (kubelet retries)");
    }
    if (*runs) {
      return makeError(
          ErrorCode::kFailedPrecondition,
          "cores " + departed.tenant.cores.toRangeString() + " were pod " + departed.pod +
              "'s (uid " + departed.tenant.uid +
              "), which kubelet no longer lists (deleted, perhaps with --force) but whose "
              "processes still run on this node; the container is not started, and its chip not "
              "reset, until they have stopped (kubelet retries the start)");
    }
    std::lock_guard lock(mutex_);
    std::erase_if(departed_, [&](const Departed& d) {
      return d.pod == departed.pod && d.tenant.uid == departed.tenant.uid;
    });
  }
  return okResult();
}

std::size_t DepartedPods::size() const {
  std::lock_guard lock(mutex_);
  return departed_.size();
}

}  // namespace torus::plugin
