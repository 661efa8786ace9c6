// KubeletReport: what the plugin's ListAndWatch streams last sent kubelet. Kubelet admits a pod
// only onto ids it was last told are Healthy, so this — not the tracker's newer state — is what a
// scheduler may place on. The agent publishes it on the Node (common/contracts/kubelet_view.h).
// Thread-safe; each stream reports from its own gRPC thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "common/base/change_notifier.h"
#include "common/contracts/kubelet_view.h"
#include "common/topology/core_set.h"
#include "device-plugin/resource_kind.h"

namespace torus::plugin {

class KubeletReport {
 public:
  explicit KubeletReport(std::vector<ResourceKind> kinds);

  void streamOpened(ResourceKind kind);
  // After a list went into the stream: `advertised` are its ids, `unhealthy` those sent as such.
  void sent(ResourceKind kind, const topology::CoreSet& advertised,
            const topology::CoreSet& unhealthy);
  // Kubelet marks every id of a resource Unhealthy as soon as its last stream ends.
  void streamClosed(ResourceKind kind);

  // Per resource name, the ids kubelet holds Unhealthy; nullopt until every resource has sent a
  // list (kubelet knows nothing of ours before that).
  std::optional<contracts::KubeletUnavailable> current() const;
  // Every resource has an open stream whose list kubelet has.
  bool serving() const;
  ChangeNotifier::Subscription onChange(std::function<void()> notify) {
    return notifier_.subscribe(std::move(notify));
  }

 private:
  struct Stream {
    int open = 0;
    bool listed = false;  // a list went out since the stream opened
    topology::CoreSet advertised;
    topology::CoreSet unhealthy;  // as kubelet has it: all of `advertised` once closed
    bool everListed = false;      // kubelet has had a list of this resource at least once
  };
  mutable std::mutex mutex_;
  std::map<ResourceKind, Stream> streams_;
  ChangeNotifier notifier_;
};

}  // namespace torus::plugin
