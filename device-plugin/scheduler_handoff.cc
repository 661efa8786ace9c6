#include "device-plugin/scheduler_handoff.h"

namespace torus::plugin {

std::optional<PromisedPod> matchPromise(const std::vector<PromisedPod>& promises, ResourceKind kind,
                                        int size, const topology::CoreSet& available,
                                        const topology::CoreSet& mustInclude) {
  const PromisedPod* best = nullptr;
  for (const PromisedPod& promise : promises) {
    if (promise.allocated || countsDevices(promise.kind) != countsDevices(kind)) continue;
    if (promise.ids.size() != size || !promise.ids.isSubsetOf(available)) continue;
    if (!mustInclude.isSubsetOf(promise.ids)) continue;
    if (best == nullptr || promise.allocTimeNs < best->allocTimeNs ||
        (promise.allocTimeNs == best->allocTimeNs && promise.uid < best->uid)) {
      best = &promise;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

}  // namespace torus::plugin
