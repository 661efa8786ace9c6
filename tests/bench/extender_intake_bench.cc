// The extender's informer intake: what reading the Pod objects the pod informer delivers costs,
// per 2,000 objects (the scheduling-throughput benchmark's batch), as ClusterSync reads them — each
// object once into a PodUpdate that the mirror, bind admission, the cross-resource preemptor and
// the pod cache share — next to each of those four reading the object itself, as they did before
// (the mirror, the preemptor and the pod cache a PodRecord each, bind admission the demand and the
// node rules). Today's PodRecord also reads a pending Neuron pod's node rules, so the baseline
// holds up to two rules reads more per pending pod than the old one did: it is an upper bound.
//
// The pods are what the throughput benchmark creates: half pending (mixed Neuron requests, a
// nodeSelector, a required node affinity, tolerations, labels), half bound with their ids.
//
//   build/tests/extender_intake_bench [--calls=N] [--pods=N]
// Target: the one intake reads the batch in at most half the time the four reads take.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "scheduler-extender/kube/kube_objects.h"
#include "scheduler-extender/state/node_eligibility.h"
#include "tests/bench/bench_stats.h"

namespace {

using namespace torus;
using nlohmann::json;

json podObject(int id) {
  const bool cores = id % 3 != 0;
  const int sizes[] = {1, 2, 4, 8, 16};
  const std::string resource = cores ? "aws.amazon.com/neuroncore" : "aws.amazon.com/neuron";
  const std::string count = std::to_string(cores ? sizes[id % 5] : (id % 2 == 0 ? 1 : 4));
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "bench-" + std::to_string(id)},
        {"namespace", "throughput"},
        {"uid", "0000-" + std::to_string(id)},
        {"resourceVersion", std::to_string(1000 + id)},
        {"creationTimestamp", "2026-12-05T05:00:00Z"},
        {"labels", {{"app", "bench"}, {"team", "ml"}, {"run", "r1"}}}}},
      {"spec",
       {{"schedulerName", "neuron-scheduler"},
        {"priority", 0},
        {"nodeSelector", {{"node.kubernetes.io/instance-type", "trn2.48xlarge"}}},
        {"affinity",
         {{"nodeAffinity",
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               json::array(
                   {{{"matchExpressions", json::array({{{"key", "eks.amazonaws.com/compute-type"},
                                                        {"operator", "NotIn"},
                                                        {"values", {"fargate"}}}})}}})}}}}}}},
        {"tolerations", json::array({{{"key", "aws.amazon.com/neuron"},
                                      {"operator", "Exists"},
                                      {"effect", "NoSchedule"}}})},
        {"containers",
         json::array({{{"name", "main"},
                       {"image", "registry.example/trainer:1"},
                       {"command", {"sleep", "infinity"}},
                       {"resources",
                        {{"limits", {{resource, count}, {"memory", "1Gi"}}},
                         {"requests", {{resource, count}, {"memory", "1Gi"}, {"cpu", "1"}}}}}}})}}},
      {"status",
       {{"phase", "Pending"},
        {"conditions",
         json::array(
             {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}})}}}};
  if (id % 2 == 1) {
    pod["spec"]["nodeName"] = "kwok-trn2-48xlarge-" + std::to_string(id % 1000);
    pod["metadata"]["annotations"] = {{"AWS_NEURON_IDS", cores ? "0-" + count : "0"},
                                      {"NEURON_ALLOCATED", "true"}};
    pod["status"] = {{"phase", "Running"}};
  }
  return pod;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = bench::intFlag(argc, argv, "calls", 30);
  const int count = bench::intFlag(argc, argv, "pods", 2000);
  log::configure({log::Level::kError, 0, log::Format::kText});
  std::vector<json> pods;
  for (int id = 0; id < count; ++id)
    pods.push_back(podObject(id));

  std::size_t kept = 0;  // what the reads found, so no read is optimised away
  const auto once = bench::summarize(bench::timeCalls(calls, [&] {
    for (const json& pod : pods) {
      const extender::PodUpdate update = extender::parsePodUpdate(pod, false);
      kept += update.record ? update.record->nodeRules.nodeSelector.size() : 0;
    }
  }));
  const auto fourTimes = bench::summarize(bench::timeCalls(calls, [&] {
    for (const json& pod : pods) {
      const auto mirror = extender::parsePodRecord(pod);
      const auto preemptor = extender::parsePodRecord(pod);
      const auto demand = extender::parsePodObject(pod);
      const extender::PodNodeRules rules = extender::parsePodNodeRules(pod);
      const auto cache = extender::parsePodRecord(pod);
      kept += (mirror ? 1 : 0) + (preemptor ? 1 : 0) + (demand ? 1 : 0) + (cache ? 1 : 0) +
              rules.nodeSelector.size();
    }
  }));
  std::printf("# reading %d Pod objects as the pod informer delivers them, %d calls (%zu)\n", count,
              calls, kept);
  bench::printHeader("four_p99_us");
  bench::printRow("four reads (before)", fourTimes, fourTimes);
  bench::printRow("one intake", once, fourTimes);
  std::printf("per %d pods: %.1f ms -> %.1f ms of CPU (p50)\n", count, fourTimes.p50Us / 1000,
              once.p50Us / 1000);
  return 0;
}
