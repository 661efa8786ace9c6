#include "scheduler-extender/kube/cross_resource_preemptor.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/kube/object_fields.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/verbs/victims.h"

namespace torus::extender {
namespace {

using nlohmann::json;

// "namespace/name" -> {namespace, name}.
std::pair<std::string, std::string> splitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {"default", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

CrossResourcePreemptor::CrossResourcePreemptor(const kube::KubeConfig& config,
                                               const ClusterState& state,
                                               const NodeFactsIndex& nodes,
                                               CrossResourcePreemptionOptions options)
    : state_(state),
      options_(std::move(options)),
      clients_(config),
      events_(config),
      nodes_(nodes) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

CrossResourcePreemptor::~CrossResourcePreemptor() {
  thread_.request_stop();
  wake_.notify_all();
}

bool CrossResourcePreemptor::track(const PodUpdate& pod, std::map<std::string, Waiting>& into,
                                   const std::map<std::string, Waiting>& before) {
  if (!pod.record) return false;  // ClusterMirror logs unreadable pods
  const PodRecord& record = *pod.record;
  // A gang's member never preempts: evicting for one member frees room for part of a gang.
  const bool inGang = !record.demand.gangKey().empty() || !record.demand.gangProblem.empty();
  if (!record.waitsUnschedulable() || record.schedulerName != options_.schedulerName || inGang) {
    into.erase(record.demand.uid);
    return false;
  }
  Waiting& entry = into[record.demand.uid];
  if (const auto it = before.find(record.demand.uid); it != before.end() && &it->second != &entry) {
    entry = it->second;
  }
  entry.pod = record.demand;
  entry.rules = record.nodeRules;
  return true;
}

void CrossResourcePreemptor::applyPods(const std::vector<PodUpdate>& pods) {
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, Waiting> waiting;
    for (const PodUpdate& pod : pods)
      track(pod, waiting, waiting_);
    waiting_ = std::move(waiting);
  }
  wake_.notify_all();
}

void CrossResourcePreemptor::applyPod(const PodUpdate& pod) {
  bool waits = false;
  {
    std::lock_guard lock(mutex_);
    if (pod.deleted) {
      waiting_.erase(pod.uid);
      return;
    }
    waits = track(pod, waiting_, waiting_);
  }
  if (waits) wake_.notify_all();
}

void CrossResourcePreemptor::run(std::stop_token stop) {
  std::mutex sleepMutex;
  std::unique_lock sleepLock(sleepMutex);
  while (!stop.stop_requested()) {
    preemptOnce();
    {
      std::lock_guard lock(mutex_);
      ++rounds_;
    }
    roundEnded_.notify_all();
    wake_.wait_for(sleepLock, stop, options_.period, [] { return false; });
  }
}

bool CrossResourcePreemptor::waitForRounds(std::uint64_t more,
                                           std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  const std::uint64_t until = rounds_ + more;
  return roundEnded_.wait_for(lock, timeout, [&] { return rounds_ >= until; });
}

void CrossResourcePreemptor::preemptOnce() {
  // The most important waiting pod first; one plan per node per round, so two preemptors never
  // count on the same victims.
  std::vector<Waiting> candidates;
  std::set<std::string> busyNodes;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mutex_);
    for (auto& [uid, entry] : waiting_) {
      // Placed already: the extender has bound it (or is binding it) to the set its victims
      // freed, but the pod object still carries its old Unschedulable condition. Planning again
      // now would find that set taken — by the pod itself — and evict a second set for nothing.
      if (state_.allocationOf(uid).has_value()) continue;
      if (!entry.victimUids.empty()) {
        const bool stillGoing = std::ranges::any_of(entry.victimUids, [&](const auto& victim) {
          return state_.allocationOf(victim).has_value();
        });
        if (stillGoing && now < entry.victimsDeadline) {
          if (const auto first = state_.allocationOf(entry.victimUids.front())) {
            busyNodes.insert(first->node);
          }
          continue;
        }
        entry.victimUids.clear();
        // Gone (the pod should place now) or past the deadline (an eviction was refused).
        if (!stillGoing) continue;
      }
      candidates.push_back(entry);
    }
  }
  if (candidates.empty()) return;
  const std::map<std::string, NodeFacts> nodes = nodes_.all();
  std::ranges::sort(candidates, [](const Waiting& a, const Waiting& b) {
    return std::tie(b.pod.priority, a.pod.uid) < std::tie(a.pod.priority, b.pod.uid);
  });
  for (const Waiting& candidate : candidates) {
    const auto plan =
        planCrossResourcePreemption(state_, candidate.pod, [&](const std::string& node) {
          const auto facts = nodes.find(node);
          return busyNodes.count(node) == 0 && facts != nodes.end() &&
                 nodeAdmits(facts->second, candidate.rules);
        });
    if (!plan) continue;
    busyNodes.insert(plan->node);
    TORUS_LOG(Info, Extender, "preempting across resources", {"pod", candidate.pod.key()},
              {"priority", candidate.pod.priority}, {"node", plan->node},
              {"victims", static_cast<int>(plan->victims.size())});
    int evictedNow = 0;
    for (const Allocation& victim : plan->victims)
      evictedNow += evict(victim, candidate.pod) ? 1 : 0;
    const std::string message = "evicting " + std::to_string(evictedNow) + " of " +
                                std::to_string(plan->victims.size()) + " lower-priority pods on " +
                                plan->node + " to free " + std::to_string(candidate.pod.count) +
                                " " + candidate.pod.resourceName +
                                " (they hold the node's cores through the other Neuron "
                                "resource, which kube-scheduler's preemption does not count)";
    events_.post(candidate.pod.namespace_,
                 podEventObject(candidate.pod.name, candidate.pod.namespace_, candidate.pod.uid,
                                true, "NeuronPreempting", message),
                 candidate.pod.key(), "NeuronPreempting");
    std::lock_guard lock(mutex_);
    ++plans_;
    if (auto it = waiting_.find(candidate.pod.uid); it != waiting_.end()) {
      for (const Allocation& victim : plan->victims)
        it->second.victimUids.push_back(victim.podUid);
      it->second.victimsDeadline = std::chrono::steady_clock::now() + options_.victimsDeadline;
    }
  }
}

bool CrossResourcePreemptor::evict(const Allocation& victim, const PodDemand& preemptor) {
  const auto [podNamespace, name] = splitKey(victim.podKey);
  const json eviction = {
      {"apiVersion", "policy/v1"},
      {"kind", "Eviction"},
      {"metadata", {{"name", name}, {"namespace", podNamespace}}},
      // Only this pod: a pod recreated under the same name is not the one we chose.
      {"deleteOptions", {{"preconditions", {{"uid", victim.podUid}}}}}};
  auto client = clients_.acquire();
  auto done = client->create("/api/v1/namespaces/" + podNamespace + "/pods/" + name + "/eviction",
                             eviction);
  std::lock_guard lock(mutex_);
  if (!done) {
    ++refused_;
    TORUS_LOG(Warn, Extender, "eviction refused; will plan again later", {"victim", victim.podKey},
              {"for", preemptor.key()}, {"error", done.error().message});
    return false;
  }
  ++evicted_;
  events_.post(podNamespace,
               podEventObject(name, podNamespace, victim.podUid, true, "NeuronPreempted",
                              "preempted by " + preemptor.key() + " (priority " +
                                  std::to_string(preemptor.priority) + ") on " + victim.node),
               victim.podKey, "NeuronPreempted");
  return true;
}

std::string CrossResourcePreemptor::prometheusText() const {
  std::lock_guard lock(mutex_);
  std::string out;
  out +=
      "# HELP torus_extender_cross_resource_preemptions_total Plans that evicted pods of one "
      "Neuron resource for a pod of the other.\n";
  out += "# TYPE torus_extender_cross_resource_preemptions_total counter\n";
  out += "torus_extender_cross_resource_preemptions_total " + std::to_string(plans_) + "\n";
  out +=
      "# HELP torus_extender_cross_resource_evictions_total Evictions asked for by those "
      "plans, by result.\n";
  out += "# TYPE torus_extender_cross_resource_evictions_total counter\n";
  out += "torus_extender_cross_resource_evictions_total{result=\"evicted\"} " +
         std::to_string(evicted_) + "\n";
  out += "torus_extender_cross_resource_evictions_total{result=\"refused\"} " +
         std::to_string(refused_) + "\n";
  return out;
}

}  // namespace torus::extender
