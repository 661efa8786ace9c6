// PodGroups: upstream's gang API (scheduling.k8s.io/v1beta1 PodGroup, Kubernetes 1.37 with the
// GenericWorkload feature), as far as the extender needs it: which groups have a gang policy and
// their minCount. A pod names its group in spec.schedulingGroup.podGroupName; the extender then
// places it like a labelled gang (docs/gangs.md). Fed by an informer when the API server serves
// PodGroups. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/base/result.h"

namespace torus::extender {

// A PodGroup's policy: a gang's minCount, or nullopt for the basic policy (pods placed one by
// one). Errors name the field.
Result<std::optional<int>> gangMinCountOf(const nlohmann::json& podGroup);

class PodGroupIndex {
 public:
  void applyList(const std::vector<std::shared_ptr<const nlohmann::json>>& items);
  void apply(const nlohmann::json& podGroup, bool deleted);
  // Whether the API serves PodGroups (an informer feeds this index).
  void setServed(bool served);
  bool served() const;

  struct Lookup {
    bool found = false;
    std::optional<int> gangMinCount;  // set for a gang policy
    std::string problem;              // the PodGroup is unreadable
  };
  Lookup find(const std::string& podNamespace, const std::string& name) const;

 private:
  struct Entry {
    std::optional<int> gangMinCount;
    std::string problem;
  };
  static Entry entryOf(const nlohmann::json& podGroup);
  mutable std::mutex mutex_;
  bool served_ = false;
  std::map<std::string, Entry> byKey_;  // "namespace/name"
};

}  // namespace torus::extender
