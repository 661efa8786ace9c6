// CrossResourcePreemptor: preemption kube-scheduler cannot see. A device held through one Neuron
// resource is reported Unhealthy on the other, so when pods of `aws.amazon.com/neuroncore` fill a
// node its `aws.amazon.com/neuron` allocatable is 0, and kube-scheduler concludes that evicting
// them cannot help a higher-priority device pod: it never calls /preempt (and vice versa).
//
// This watches for such pods — asking Neuron, scheduled by our scheduler, PodScheduled=False
// Unschedulable, no nominated node — and every `period` plans for the most important one
// (planCrossResourcePreemption): a node that kube-scheduler's node filters would let the pod onto
// (node_eligibility.h) and a minimal set of lower-priority pods, at least one of the other
// resource, whose eviction opens a valid set. It evicts them through the Eviction API
// (PodDisruptionBudgets apply: a refused eviction is logged and retried later), posts an Event on
// the preemptor and on each victim, and waits for them to go before planning again for that pod.
// Once they are gone the node agent reports the devices free, kubelet raises the allocatable,
// and kube-scheduler places the pod through the extender as usual.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/kube/kube_client.h"
#include "common/kube/kube_client_pool.h"
#include "scheduler-extender/kube/courtesy_writer.h"
#include "scheduler-extender/kube/node_facts_index.h"
#include "scheduler-extender/state/cluster_state.h"
#include "scheduler-extender/state/node_eligibility.h"

namespace torus::extender {

struct CrossResourcePreemptionOptions {
  std::string schedulerName = "neuron-scheduler";  // only pods scheduled by it
  std::chrono::milliseconds period{std::chrono::seconds(2)};
  // How long the victims of one plan may take to go before the preemptor plans again.
  std::chrono::milliseconds victimsDeadline{std::chrono::minutes(2)};
};

class CrossResourcePreemptor {
 public:
  // `nodes` outlives this object (ClusterSync owns or is given it and keeps it current).
  CrossResourcePreemptor(const kube::KubeConfig& config, const ClusterState& state,
                         const NodeFactsIndex& nodes, CrossResourcePreemptionOptions options = {});
  ~CrossResourcePreemptor();
  CrossResourcePreemptor(const CrossResourcePreemptor&) = delete;
  CrossResourcePreemptor& operator=(const CrossResourcePreemptor&) = delete;

  // The pod informer's lists and events, as ClusterSync reads them: a list replaces the waiting
  // pods, an update adds, changes or deletes one.
  void applyPods(const std::vector<PodUpdate>& pods);
  void applyPod(const PodUpdate& pod);

  // torus_extender_cross_resource_* counters, Prometheus text.
  std::string prometheusText() const;
  // Waits until `more` rounds have ended since the call (tests count plans per round, not per
  // span of time); false on timeout.
  bool waitForRounds(std::uint64_t more, std::chrono::milliseconds timeout) const;

 private:
  struct Waiting {
    PodDemand pod;
    PodNodeRules rules;
    // Set while the victims of a plan for this pod are going.
    std::vector<std::string> victimUids;
    std::chrono::steady_clock::time_point victimsDeadline{};
  };
  // Whether the pod waits for preemption, and its entry updated if so.
  bool track(const PodUpdate& pod, std::map<std::string, Waiting>& into,
             const std::map<std::string, Waiting>& before);
  void run(std::stop_token stop);
  void preemptOnce();
  // Evicts one victim; false when the API refused (a PodDisruptionBudget, a gone pod).
  bool evict(const Allocation& victim, const PodDemand& preemptor);

  const ClusterState& state_;
  CrossResourcePreemptionOptions options_;
  kube::KubeClientPool clients_;
  CourtesyWriter events_;
  mutable std::mutex mutex_;
  std::map<std::string, Waiting> waiting_;  // by UID
  const NodeFactsIndex& nodes_;
  std::uint64_t plans_ = 0;
  std::uint64_t evicted_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t rounds_ = 0;
  mutable std::condition_variable roundEnded_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: it uses the members above
};

}  // namespace torus::extender
