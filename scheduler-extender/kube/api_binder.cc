#include "scheduler-extender/kube/api_binder.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/contracts/neuron_handoff.h"
#include "common/kube/object_fields.h"
#include "scheduler-extender/state/pod_demand.h"

namespace torus::extender {
namespace {

using nlohmann::json;

std::string podPath(const std::string& podNamespace, const std::string& name) {
  return "/api/v1/namespaces/" + podNamespace + "/pods/" + name;
}

std::string nodeNameOf(const json& pod) {
  return kube::stringField(pod, "spec", "nodeName");
}

// kube-scheduler runs each pod's binding cycle in a goroutine of its own, so binds arrive
// together, each waiting on its Binding (verbs/bind_backlog.h keeps them to this many). With
// fewer kept connections than binds in flight, every bind beyond them opens a new TLS connection
// (a handshake on both sides of a busy API server) and drops it after.
constexpr std::size_t kKeptBindConnections = 64;

}  // namespace

ApiBinder::ApiBinder(const kube::KubeConfig& config, bool allocationEvents)
    : clients_(config, kKeptBindConnections),
      courtesy_(config),
      allocationEvents_(allocationEvents) {}

Result<void> ApiBinder::bind(const PodDemand& pod, const Allocation& allocation,
                             std::optional<int> ultraServerNodes) {
  const contracts::Handoff handoff{allocation.ids, allocation.allocTimeNs, false, pod.resourceName,
                                   ultraServerNodes};
  auto client = clients_.acquire();
  if (auto bound = postBinding(*client, pod, allocation.node, handoff); !bound) {
    postEvent(pod, false, "NeuronBindFailed", bound.error().message);
    return bound;
  }
  if (!allocationEvents_) return okResult();
  postEvent(pod, true, "NeuronAllocated",
            "assigned " + pod.resourceName + " " + allocation.ids.toRangeString() + " on node " +
                allocation.node +
                (ultraServerNodes ? ", one of " + std::to_string(*ultraServerNodes) +
                                        " UltraServer nodes running as one job"
                                  : ""));
  return okResult();
}

// One call: the API server merges a Binding's annotations into the pod together with its node
// (pods/binding), so the node's kubelet and agent never see the pod bound without its ids, and a
// bind costs one write instead of two.
Result<void> ApiBinder::postBinding(kube::KubeClient& client, const PodDemand& pod,
                                    const std::string& node, const contracts::Handoff& handoff) {
  const json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata",
                         {{"name", pod.name},
                          {"namespace", pod.namespace_},
                          {"uid", pod.uid},
                          {"annotations", contracts::handoffAnnotations(handoff)}}},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  auto created = client.create(podPath(pod.namespace_, pod.name) + "/binding", binding);
  if (created) return okResult();
  if (created.error().code == ErrorCode::kAborted) {
    // 409: already bound. If to this node with these ids, an earlier try of this bind got through.
    auto current = client.get(podPath(pod.namespace_, pod.name));
    if (current && nodeNameOf(*current) == node) {
      const auto theirs = contracts::handoffOf(*current);
      if (theirs && *theirs && (*theirs)->ids == handoff.ids) return okResult();
    }
  }
  return std::move(created).error().withContext("binding pod " + pod.key() + " to " + node);
}

Result<PodDemand> ApiBinder::fetchPod(const std::string& podNamespace, const std::string& name) {
  auto client = clients_.acquire();
  auto pod = client->get(podPath(podNamespace, name));
  if (!pod) return std::move(pod).error();
  return parsePodObject(*pod, "pod " + podNamespace + "/" + name);
}

void ApiBinder::nominate(const PodDemand& pod, const std::string& node) {
  courtesy_.nominate(pod.namespace_, pod.name, node);
}

void ApiBinder::postEvent(const PodDemand& pod, bool normal, const std::string& reason,
                          const std::string& message) {
  const json event = podEventObject(pod.name, pod.namespace_, pod.uid, normal, reason, message);
  courtesy_.post(pod.namespace_, event, pod.key(), reason);
}

}  // namespace torus::extender
