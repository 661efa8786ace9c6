// The reconcile pass of UltraServerOperator (ultraserver_operator.h): from the informers' objects
// to the plan (model/planner.h) and the writes that carry it out (kube/operator_api.h), in the
// order that keeps a pass safe to stop half-way: pods evicted first, then the NeuronUltraServers
// (nodes whose pods have not gone yet still recorded as their workload's), then each workload's
// status. The loop, lease and wiring that run it are ultraserver_operator.cc.
#include <algorithm>
#include <set>

#include "common/base/log.h"
#include "common/base/utc_time.h"
#include "common/contracts/neuron_ultraserver.h"
#include "common/kube/object_fields.h"
#include "ultraserver-operator/app/ultraserver_operator.h"
#include "ultraserver-operator/model/pods_first.h"

namespace torus::ultraserver {

using json = nlohmann::json;
using kube::stringAt;

namespace {

// API errors of single workloads in one pass: each is logged where it happens and the pass goes
// on with the others (one namespace's quota must not stop every workload's status); the pass
// still ends failed, so it is retried.
class WorkloadFailures {
 public:
  void add(const std::string& workload, const Error& error) {
    TORUS_LOG(Warn, UltraServer, "API error for one workload; the others go on",
              {"workload", workload}, {"error", error.message});
    if (first_.empty()) first_ = workload + ": " + error.message;
    ++count_;
  }
  Result<void> result() const {
    if (count_ == 0) return {};
    return makeError(
        ErrorCode::kUnavailable,
        std::to_string(count_) + " workload API error(s) this pass; the first: " + first_);
  }

 private:
  int count_ = 0;
  std::string first_;
};

}  // namespace

// One reconcile pass: the objects as the informers held them at its start, what was read and
// decided on the way, and the API errors of single workloads.
struct UltraServerOperator::Pass {
  Cache workloadObjects;
  Cache stored;  // NeuronUltraServers
  Cache claims;
  std::vector<UltraServer> servers;
  std::vector<Workload> workloads;
  std::map<std::string, OperatorApi::WorkloadPods> listedPods;  // by workload ref, once a pass
  // What a workload's template says before anything is reserved for it: one it cannot own (a
  // clash) makes it hold nothing; one the API refuses (a quota) is reported on it.
  std::map<std::string, WorkloadOutcome> templateOutcomes;
  WorkloadFailures failures;
};

namespace {

// The UltraServers the nodes' labels describe, each node marked busy where a claim of no
// workload holds its devices.
std::vector<UltraServer> serversOf(const OperatorApi::Cache& nodes,
                                   const OperatorApi::Cache& claims) {
  const std::map<std::string, BusyNode> busy = nodesBusyWithClaims(claims);
  std::vector<MemberNode> members;
  for (const auto& [name, node] : nodes) {
    auto member = memberOf(*node);
    if (!member) continue;
    if (const auto claim = busy.find(member->name); claim != busy.end()) {
      member->busyWith = claim->second.claim;
      member->busyBeforeTaint = claim->second.beforeTaint;
      member->busySince = claim->second.since;
    }
    members.push_back(std::move(*member));
  }
  return groupUltraServers(std::move(members));
}

}  // namespace

Result<void> UltraServerOperator::reconcileOnce() {
  Pass pass;
  Cache nodes;
  {
    std::lock_guard lock(mutex_);
    nodes = nodes_;
    pass.workloadObjects = workloads_;
    pass.stored = ultraServers_;
    pass.claims = claims_;
  }
  pass.servers = serversOf(nodes, pass.claims);
  for (const auto& [key, object] : pass.workloadObjects) {
    if (auto workload = readWorkload(*object, pass)) pass.workloads.push_back(std::move(*workload));
  }
  std::vector<Allocation> current;
  for (const auto& [name, object] : pass.stored) {
    for (Allocation& allocation : allocationsOf(*object))
      current.push_back(std::move(allocation));
  }

  const std::string now = utcNowRfc3339();
  const std::chrono::seconds grace(config_.failureGraceSeconds);
  AllocationPlan plan = planAllocations(pass.servers, pass.workloads, current, now, grace);
  // Pods first: nodes a workload gives up while its pods still run there stay its own (the
  // planner keeps them recorded, Pending) until a later pass finds those pods gone, so a pod
  // that must move is gone before its nodes are handed to anyone else. Its pods are evicted
  // below all the same; the next pass hands the nodes on.
  if (findPodsOnNodesGivenUp(pass, current, plan))
    plan = planAllocations(pass.servers, pass.workloads, current, now, grace);
  // A grace period that ends while nothing changes still needs a pass at its end.
  recheckIn_ = plan.recheckIn;
  completeOutcomes(pass, plan);

  evictPods(pass, plan);
  if (auto done = api_.writeUltraServers(pass.servers, plan.allocations, pass.stored); !done)
    return std::move(done).error();
  writeWorkloads(pass, plan);
  return pass.failures.result();
}

std::optional<Workload> UltraServerOperator::readWorkload(const json& object, Pass& pass) {
  Workload workload = parseWorkload(object);
  if (workload.deleting && !hasFinalizer(object)) return std::nullopt;  // not ours to hold back
  if (workload.invalid.empty() && !workload.deleting) {
    WorkloadOutcome& outcome = pass.templateOutcomes[workload.ref()];
    if (auto done = api_.ensureClaimTemplate(workload, outcome); !done) {
      // Said on the workload itself, which keeps what it was given; the others go on.
      outcome.degraded = true;
      outcome.degradedReason = "ClaimTemplateNotWritten";
      outcome.degradedMessage = done.error().message;
      pass.failures.add(workload.ref(), done.error());
    } else if (outcome.state == WorkloadState::kFailed) {
      workload.invalid = outcome.message;
    }
  }
  if (workload.deleting && workload.invalid.empty()) {
    // The template goes first, so no new claim is made from it; then the pods that own the
    // workload's claims are evicted, and the UltraServers are held until they are gone.
    auto pods = [&]() -> Result<OperatorApi::WorkloadPods> {
      if (auto done = api_.deleteClaimTemplate(workload); !done) return std::move(done).error();
      return api_.podsOf(workload, podsOfWorkload(pass.claims, workload));
    }();
    if (pods) {
      workload.podsRemain = !pods->mine.empty();
      pass.listedPods[workload.ref()] = std::move(*pods);
    } else {
      // Its finalizer stays until its pods can be seen gone; the other workloads go on.
      workload.podsRemain = true;
      pass.failures.add(workload.ref(), pods.error());
    }
  }
  return workload;
}

bool UltraServerOperator::findPodsOnNodesGivenUp(Pass& pass, const std::vector<Allocation>& current,
                                                 const AllocationPlan& plan) {
  bool found = false;
  for (const auto& [ref, nodes] : nodesGivenUp(pass.workloads, current, plan)) {
    // A structured binding cannot be captured by every compiler CI builds with (clang 14).
    const std::string& givenUpBy = ref;
    auto workload = std::find_if(pass.workloads.begin(), pass.workloads.end(),
                                 [&](const Workload& w) { return w.ref() == givenUpBy; });
    if (workload == pass.workloads.end()) continue;
    auto listed = pass.listedPods.find(ref);
    if (listed == pass.listedPods.end()) {
      auto pods = api_.podsOf(*workload, podsOfWorkload(pass.claims, *workload));
      if (!pods) {
        // Not seen gone: the nodes stay its own until a pass can list them.
        pass.failures.add(ref, pods.error());
        workload->podsRemain = true;
        found = true;
        continue;
      }
      listed = pass.listedPods.emplace(ref, std::move(*pods)).first;
    }
    if (podsStillOn(listed->second.mine, nodes, pass.servers)) {
      workload->podsRemain = true;
      found = true;
    }
  }
  return found;
}

void UltraServerOperator::completeOutcomes(Pass& pass, AllocationPlan& plan) {
  for (auto& [ref, outcome] : pass.templateOutcomes) {
    WorkloadOutcome& planned = plan.outcomes[ref];
    if (outcome.state == WorkloadState::kFailed) {
      planned.reason = outcome.reason;  // the planner saw it invalid; say why
    } else if (outcome.degraded && !planned.degraded) {
      planned.degraded = true;
      planned.degradedReason = outcome.degradedReason;
      planned.degradedMessage = outcome.degradedMessage;
    }
  }
  for (const Workload& workload : pass.workloads) {
    if (workload.deleting && workload.podsRemain) {
      reportPodsNotGone(workload, *pass.workloadObjects.at(workload.ref()), pass.listedPods,
                        plan.outcomes[workload.ref()]);
    }
  }
}

void UltraServerOperator::evictPods(Pass& pass, AllocationPlan& plan) {
  for (const Workload& workload : pass.workloads) {
    const WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    if (!outcome.restartAllPods && outcome.restartPodsOn.empty()) continue;
    auto listed = pass.listedPods.find(workload.ref());
    if (listed == pass.listedPods.end()) {
      auto pods = api_.podsOf(workload, podsOfWorkload(pass.claims, workload));
      if (!pods) {
        pass.failures.add(workload.ref(), pods.error());
        continue;
      }
      listed = pass.listedPods.emplace(workload.ref(), std::move(*pods)).first;
    }
    if (auto done = api_.evictPods(workload, outcome, listed->second.mine); !done) {
      pass.failures.add(workload.ref(), done.error());
    }
  }
}

void UltraServerOperator::writeWorkloads(Pass& pass, AllocationPlan& plan) {
  int allocated = 0;
  int waiting = 0;
  for (const Workload& workload : pass.workloads) {
    WorkloadOutcome& outcome = plan.outcomes[workload.ref()];
    const bool released = std::none_of(
        plan.allocations.begin(), plan.allocations.end(),
        [&](const Allocation& allocation) { return allocation.workloadRef == workload.ref(); });
    if (workload.deleting && released && !workload.podsRemain)
      reportRecreators(workload, pass.listedPods);
    if (auto done = api_.writeWorkload(workload, outcome, *pass.workloadObjects.at(workload.ref()),
                                       released);
        !done) {
      pass.failures.add(workload.ref(), done.error());
    }
    allocated += outcome.state == WorkloadState::kAllocated;
    waiting += outcome.state == WorkloadState::kPending ||
               outcome.state == WorkloadState::kPartiallyAllocated;
  }
  workloadsAllocated_.store(allocated);
  workloadsWaiting_.store(waiting);
}

void UltraServerOperator::reportPodsNotGone(
    const Workload& workload, const json& object,
    const std::map<std::string, OperatorApi::WorkloadPods>& listed, WorkloadOutcome& outcome) {
  const auto since = parseUtcRfc3339(stringAt(object, {"metadata", "deletionTimestamp"}));
  const auto found = listed.find(workload.ref());
  if (!since || found == listed.end() || found->second.mine.empty()) return;
  const auto waited =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *since);
  const std::chrono::seconds bound(config_.failureGraceSeconds);
  if (waited < bound) {
    recheckIn_ = std::min(recheckIn_.value_or(bound - waited), bound - waited);
    return;
  }
  std::string pods;
  for (const json& pod : found->second.mine) {
    const std::string controller = api_.controllerOf(pod);
    pods += (pods.empty() ? "" : ", ") + stringAt(pod, {"metadata", "name"}) + " on " +
            stringAt(pod, {"spec", "nodeName"}) +
            (controller.empty() ? "" : " (" + controller + ")");
  }
  // Said once (an Event when the reason first appears); the UltraServers stay held, since the
  // pods' claims still hold their chips.
  outcome.degraded = true;
  outcome.degradedReason = "PodsNotGone";
  outcome.degradedMessage = "deleted " + std::to_string(waited.count()) +
                            " s ago, its pods are not gone: " + pods +
                            "; its UltraServers stay held until they are (a pod on a node that "
                            "is down ends when the node returns or is deleted)";
}

void UltraServerOperator::reportRecreators(
    const Workload& workload, const std::map<std::string, OperatorApi::WorkloadPods>& listed) {
  const auto found = listed.find(workload.ref());
  if (found == listed.end() || found->second.claimless.empty()) return;
  std::set<std::string> controllers;
  for (const json& pod : found->second.claimless) {
    const std::string controller = api_.controllerOf(pod);
    controllers.insert(controller.empty() ? "pod " + stringAt(pod, {"metadata", "name"})
                                          : controller);
  }
  std::string names;
  for (const std::string& controller : controllers)
    names += (names.empty() ? "" : ", ") + controller;
  api_.warn(workload, "PodsStillCreated",
            names + " keeps creating pods that use ResourceClaimTemplate " +
                workload.claimTemplate +
                ", deleted with the workload: they stay Pending; scale it to zero or delete it");
}

}  // namespace torus::ultraserver
