// How the node agent serves kubelet: the device plugin (with the extender's hand-off, the kubelet
// view it publishes, and the drain before it stops) or the DRA driver. The agent's start-up and
// wiring are in node_agent.cc.
#include <chrono>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/event_object.h"
#include "common/kube/kube_client.h"
#include "node-runtime/agent/kube/daemonset_successor.h"
#include "node-runtime/agent/kube/restarting_taint.h"
#include "node-runtime/agent/node_agent.h"
#include "node-runtime/reset/pod_processes.h"

namespace torus::agent {

Result<void> NodeAgent::startDevicePlugin(const AgentConfig& config,
                                          const std::optional<kube::KubeConfig>& kube) {
  const reset::ResetPolicy resetPolicy = containerStartResetPolicy(resetLimit(config));
  view_ = std::make_unique<PluginNodeView>(*monitor_, resetPolicy);
  if (kube) {
    handoff_ = std::make_unique<PodAnnotationHandoff>(*kube, config.nodeName);
    TORUS_LOG(Info, Agent, "reading the scheduler extender's hand-off", {"server", kube->server},
              {"node", config.nodeName});
  }
  plugin::DevicePluginOptions options = config.plugin;
  options.podResourcesInterval = std::chrono::milliseconds(config.podResourcesIntervalMs);
  if (nodeEvents_) {
    options.nodeEvent = [events = nodeEvents_.get()](std::string_view reason,
                                                     std::string_view message) {
      events->warn(reason, message);
    };
  }
  // A force-deleted pod's ids go to the next pod while its containers still run: its cgroup
  // (named after its UID, which only the pod watch knows) says when they have stopped.
  options.podStillRuns = [procRoot = resetPolicy.procRoot](const std::string& uid) {
    return reset::podHasProcesses(procRoot, uid);
  };
  if (handoff_) {
    options.podUid = [handoff = handoff_.get()](const std::string& pod) {
      return handoff->uidOf(pod);
    };
  }
  plugins_ = std::make_unique<plugin::DevicePluginManager>(options, *view_, handoff_.get());
  TORUS_RETURN_IF_ERROR(plugins_->start(), "serving");
  if (handoff_) {
    podEnded_ = handoff_->onPodEnded([this] { plugins_->podEnded(); });
  }
  if (kube && config.publishNode) {
    kubeletView_ = std::make_unique<KubeletViewPublisher>(*kube, config.nodeName, *plugins_);
    if (!config.daemonSet.empty()) {
      successorClient_ = std::make_unique<kube::KubeClient>(*kube, std::chrono::seconds(3));
      daemonSet_ = config.daemonSet;
      nodeName_ = config.nodeName;
    }
  }
  return okResult();
}

void NodeAgent::drainDevicePlugin() {
  if (!kubeletView_) return;
  if (successorClient_) {
    // Unreadable: taint as always; a pod refused at admission costs less than being wrong here
    // for a whole node's workloads during a restart.
    auto expected = successorExpected(*successorClient_, daemonSet_, nodeName_);
    if (expected && !*expected) {
      TORUS_LOG(Info, Plugin,
                "no agent follows this one here (its DaemonSet is gone or no longer selects the "
                "node); leaving the node untainted",
                {"daemonset", daemonSet_}, {"node", nodeName_});
      return;
    }
    if (!expected) {
      TORUS_LOG(Warn, Plugin, "cannot tell whether another agent follows; tainting the node",
                {"daemonset", daemonSet_}, {"error", expected.error().message});
    }
  }
  if (auto tainted = kubeletView_->stopServing(); !tainted) {
    TORUS_LOG(Warn, Plugin,
              "could not taint the node before stopping; a Neuron pod bound here before the next "
              "agent registers fails admission",
              {"error", tainted.error().message});
    return;
  }
  if (!handoff_) return;
  // Pods bound here before the taint reached the schedulers (one in a binding cycle then lands up
  // to a moment later; the extender refuses binds here from the moment it sees the taint) must be
  // admitted while kubelet still counts our ids: wait until kubelet has admitted every pod of this
  // node that asks for a Neuron resource (its pod-resources lists it, or its status shows it), and
  // nothing new was bound for a second. Kubelet admits a bound pod quickly, but one at a time.
  constexpr auto kQuiet = std::chrono::seconds(1);
  constexpr auto kLongest = std::chrono::seconds(10);
  const auto started = std::chrono::steady_clock::now();
  auto lastPending = started;
  std::vector<std::string> pending;
  while (std::chrono::steady_clock::now() - started < kLongest) {
    std::set<std::string> admitted;
    for (const plugin::Holder& holder : plugins_->assignments().holders)
      admitted.insert(holder.pod);
    pending = handoff_->awaitingAdmissionExcept(admitted);
    const auto now = std::chrono::steady_clock::now();
    if (!pending.empty()) {
      lastPending = now;
      plugins_->podEnded();  // read pod-resources again now, not at the next poll
    }
    if (pending.empty() && now - lastPending >= kQuiet) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!pending.empty()) {
    TORUS_LOG(Warn, Plugin, "stopping with pods bound here that kubelet has not admitted yet",
              {"pods", static_cast<int>(pending.size())}, {"first", pending.front()});
  }
}

Result<void> NodeAgent::startDra(const AgentConfig& config,
                                 const std::optional<kube::KubeConfig>& kube) {
  if (!kube) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--dra needs the Kubernetes API (in-cluster or --kubeconfig): the driver "
                     "publishes ResourceSlices and reads ResourceClaims");
  }
  const reset::ResetPolicy resetPolicy = containerStartResetPolicy(resetLimit(config));
  view_ = std::make_unique<PluginNodeView>(*monitor_, resetPolicy);
  dra::DraOptions options;
  // A claim of a force-deleted pod is not given back while the pod's containers still run.
  options.podStillRuns = [procRoot = resetPolicy.procRoot](const std::string& uid) {
    return reset::podHasProcesses(procRoot, uid);
  };
  options.nodeName = config.nodeName;
  options.kubelet.pluginsDir = config.draPluginsDir;
  options.kubelet.registryDir = config.draRegistryDir;
  options.cdiRoot = config.cdiRoot;
  options.coreDevices = config.draCoreDevices;
  options.healthTaints = config.draHealthTaints;
  options.resync = std::chrono::milliseconds(config.draResyncMs);
  options.ultraServerReservations = !config.ultraServerReservations.empty();
  options.reservationNamespace = config.ultraServerReservations;
  kube::KubeClient client(*kube, std::chrono::seconds(5));
  auto driver = dra::DraDriver::start(options, *kube, *view_);
  if (!driver) {
    // The pod restarts and fails the same way: the Node says why, where operators look first.
    const nlohmann::json event = kube::eventObject(
        {"Node", config.nodeName, "", config.nodeName}, "default", false, "DRADriverNotStarted",
        driver.error().message, "neuron-node-agent", config.nodeName);
    if (auto posted = client.create("/api/v1/namespaces/default/events", event); !posted) {
      TORUS_LOG(Warn, Agent, "could not post a node event", {"reason", "DRADriverNotStarted"},
                {"error", posted.error().message});
    }
    return std::move(driver).error();
  }
  dra_ = std::move(*driver);
  // A node that served the device plugin before keeps its restarting taint until someone removes
  // it; under the DRA driver kubelet needs no plugin list, so the node takes pods at once.
  if (auto removed = setRestartingTaint(client, config.nodeName, false); !removed) {
    TORUS_LOG(Warn, Agent, "could not remove the device plugin's restarting taint",
              {"error", removed.error().message});
  } else if (*removed) {
    TORUS_LOG(Info, Agent, "removed the device plugin's restarting taint: the DRA driver serves",
              {"node", config.nodeName});
  }
  claimHolders_ =
      std::make_unique<ClaimHolderPoller>(config.plugin.podResourcesSocket, config.nodeName,
                                          std::chrono::milliseconds(config.podResourcesIntervalMs));
  return okResult();
}

}  // namespace torus::agent
