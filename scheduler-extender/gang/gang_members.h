// GangMembers: the pods of every gang (torus.dev/gang) as the API lists them — pending or bound,
// until they finish or go — so a member's filter knows whether the whole gang exists yet, which
// members are placed and what the others ask for. Fed by the pod informer (and, without an API,
// by filter requests). Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {

struct GangMember {
  PodDemand demand;
  std::string node;  // spec.nodeName; "" while pending
  // A filter of it ended without a node (its gang incomplete, not fitting whole, ...):
  // kube-scheduler holds it back for a while, and a change to the pod (a nomination) is what
  // brings it back at once when its gang is placed.
  bool turnedAway = false;
};

class GangMembers {
 public:
  // A pod seen (added or changed). A pod not in a gang, finished or being deleted is forgotten.
  void apply(const PodDemand& pod, const std::string& node, bool gone);
  void forget(const std::string& uid);
  // The member's filter ended without a node (GangMember::turnedAway); kept until it goes.
  void markTurnedAway(const std::string& uid);
  // Keeps only these pods (after a full list).
  void retain(const std::vector<std::string>& uids);
  // The members of the gang `namespace/name` (PodDemand::gangKey()), by UID.
  std::vector<GangMember> of(const std::string& gangKey) const;
  std::size_t gangCount() const;

 private:
  void forgetLocked(const std::string& uid);

  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, GangMember>> byGang_;  // gang key -> uid -> member
  std::map<std::string, std::string> gangOf_;                        // uid -> gang key
};

}  // namespace torus::extender
