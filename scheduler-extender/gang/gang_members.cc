#include "scheduler-extender/gang/gang_members.h"

#include <set>

namespace torus::extender {

void GangMembers::apply(const PodDemand& pod, const std::string& node, bool gone) {
  std::lock_guard lock(mutex_);
  const std::string key = pod.gangKey();
  bool turnedAway = false;
  if (const auto it = gangOf_.find(pod.uid); it != gangOf_.end() && it->second == key)
    turnedAway = byGang_[key][pod.uid].turnedAway;  // the same member, changed
  forgetLocked(pod.uid);
  if (gone || key.empty()) return;
  byGang_[key][pod.uid] = GangMember{pod, node, turnedAway};
  gangOf_[pod.uid] = key;
}

void GangMembers::markTurnedAway(const std::string& uid) {
  std::lock_guard lock(mutex_);
  if (const auto it = gangOf_.find(uid); it != gangOf_.end())
    byGang_[it->second][uid].turnedAway = true;
}

void GangMembers::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  forgetLocked(uid);
}

void GangMembers::forgetLocked(const std::string& uid) {
  const auto it = gangOf_.find(uid);
  if (it == gangOf_.end()) return;
  const auto gang = byGang_.find(it->second);
  if (gang != byGang_.end()) {
    gang->second.erase(uid);
    if (gang->second.empty()) byGang_.erase(gang);
  }
  gangOf_.erase(it);
}

void GangMembers::retain(const std::vector<std::string>& uids) {
  const std::set<std::string> keep(uids.begin(), uids.end());
  std::lock_guard lock(mutex_);
  std::vector<std::string> gone;
  for (const auto& [uid, gang] : gangOf_) {
    if (keep.count(uid) == 0) gone.push_back(uid);
  }
  for (const std::string& uid : gone)
    forgetLocked(uid);
}

std::vector<GangMember> GangMembers::of(const std::string& gangKey) const {
  std::lock_guard lock(mutex_);
  std::vector<GangMember> members;
  if (const auto it = byGang_.find(gangKey); it != byGang_.end()) {
    for (const auto& [uid, member] : it->second)
      members.push_back(member);
  }
  return members;
}

std::size_t GangMembers::gangCount() const {
  std::lock_guard lock(mutex_);
  return byGang_.size();
}

}  // namespace torus::extender
