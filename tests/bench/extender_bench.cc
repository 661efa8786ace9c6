// Scheduler extender benchmark.
//  1. filter + prioritize for one pod over 5,000 nodes (names only) over real HTTP, next to an
//     HTTP echo of the same body on the same server (baseline), and bind latency; then filter
//     over 500 of them by name (nodeCacheCapable: true) next to the same as Node objects.
//  3. (after 2) A gang's plan: the first member's filter of a 4-pod whole-node gang over 250
//     UltraServers (1,000 trn2u.48xlarge, 200 of them with a node taken) and 500 trn2.48xlarge,
//     which plans and reserves all four, next to one whole-node pod's filter over the same nodes.
//  4. A filter that chooses the node (--choose-in-filter) next to plain filter, one 4-chip pod
//     over 500 of 5,000 partly used nodes.
//  5. The preempt verb for a 16-chip pod on a full cluster (5,000 nodes, four 4-chip pods each),
//     kube-scheduler proposing victims on 500 nodes, next to the same answer built with one pass
//     over every allocation per node (how the verb looked them up before).
//  2. A churn trace on 256 trn2.48xlarge + 64 inf2.48xlarge: arrivals and departures of mixed
//     1-64-core and 1-16-device pods, placed by the extender's verbs, next to three baselines run
//     on the same trace in the same process: topology-aware first fit (first node with a valid
//     set), and what kube-scheduler does without the extender — count free ids, then take the
//     first node with enough (count-first-fit) or the least allocated one (count-spread, its
//     default scoring) and let the node find a valid set or fail the pod.
//
//   build/tests/extender_bench [--calls=N] [--pods=N]
// Targets: p99 <= 25 ms at 5,000 nodes; every placement on an
// allowed shape; utilization >= first-fit + 10 points.
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/http/http_server.h"
#include "common/topology/allowed_shapes.h"
#include "scheduler-extender/server/http_routes.h"
#include "scheduler-extender/state/simulated_cluster.h"
#include "scheduler-extender/verbs/gang_verbs.h"
#include "scheduler-extender/verbs/verbs.h"
#include "scheduler-extender/verbs/victims.h"
#include "tests/bench/bench_stats.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace {

using namespace torus;
using extender::PodDemand;
using topology::AllocationUnit;

PodDemand makePod(int id, AllocationUnit unit, int count) {
  PodDemand pod;
  pod.name = "pod-" + std::to_string(id);
  pod.namespace_ = "bench";
  pod.uid = "uid-" + std::to_string(id);
  pod.unit = unit;
  pod.count = count;
  pod.resourceName =
      unit == AllocationUnit::kCore ? "aws.amazon.com/neuroncore" : "aws.amazon.com/neuron";
  return pod;
}

// First fit: the first node in name order where the lowest free ids of the request size form a
// run (cores) or the first allowed set (devices) — what a scheduler without topology scoring does.
bool firstFit(extender::ClusterState& state, const std::vector<std::string>& nodes,
              const PodDemand& pod) {
  for (const std::string& name : nodes) {
    auto view = state.node(name);
    if (!view) continue;
    const topology::CoreSet free = extender::freeIds(*view, pod.unit);
    if (pod.unit == AllocationUnit::kDevice) {
      for (const auto& set :
           topology::allowedDeviceSets(topology::shapeRulesOf(view->model), pod.count)) {
        if (set.isSubsetOf(free)) return state.record(name, pod, set).ok();
      }
      continue;
    }
    for (int start = 0; start + pod.count <= view->model.logicalCoreCount(); ++start) {
      const auto cores = topology::CoreSet::range(start, pod.count);
      if (cores.isSubsetOf(free)) return state.record(name, pod, cores).ok();
    }
  }
  return false;
}

// What a cluster without the extender does: kube-scheduler only counts free ids (allocatable
// minus requests) and picks a node — the first that has enough (`spread` false) or the least
// allocated one (`spread` true, kube-scheduler's default scoring); the device plugin on that node
// then needs a valid set, and the pod fails when there is none.
bool countingScheduler(extender::ClusterState& state, const std::vector<std::string>& nodes,
                       const PodDemand& pod, bool spread) {
  const std::string* best = nullptr;
  double bestFree = -1;
  for (const std::string& name : nodes) {
    auto view = state.node(name);
    if (!view) continue;
    const int free = extender::freeIds(*view, pod.unit).size();
    if (free < pod.count) continue;
    if (!spread) return state.reserve(name, pod).ok();
    const int total = pod.unit == AllocationUnit::kDevice ? view->model.deviceCount()
                                                          : view->model.logicalCoreCount();
    const double share = static_cast<double>(free) / total;
    if (share > bestFree) {
      bestFree = share;
      best = &name;
    }
  }
  return best != nullptr && state.reserve(*best, pod).ok();
}

// 3. What planning a gang costs at UltraServer scale, next to one pod's filter.
void benchGangPlan(int calls) {
  extender::ClusterState state;
  extender::NodeDomainIndex domains;
  std::vector<std::string> nodes;
  for (int us = 0; us < 250; ++us) {
    for (int position = 0; position < 4; ++position) {
      const std::string name = "us" + std::to_string(us) + "-" + std::to_string(position);
      if (!state.upsertNode(name, "trn2u.48xlarge").ok()) std::abort();
      extender::NodeDomains where;
      where.levels[0] = "us-" + std::to_string(us);
      where.levels[1] = "spine-" + std::to_string(us / 25);
      domains.set(name, where);
      nodes.push_back(name);
      // 200 UltraServers have a node taken: a gang of four fits only in the other 50.
      if (us < 200 && position == 0 &&
          !state.reserve(name, makePod(-1 - us, AllocationUnit::kDevice, 16)).ok()) {
        std::abort();
      }
    }
  }
  for (int i = 0; i < 500; ++i) {
    const std::string name = "trn2-" + std::to_string(i);
    if (!state.upsertNode(name, "trn2.48xlarge").ok()) std::abort();
    nodes.push_back(name);
  }
  const PodDemand single = makePod(1'000'000, AllocationUnit::kDevice, 16);
  const auto onePod = bench::summarize(
      bench::timeCalls(calls, [&] { (void)extender::filter(state, single, nodes); }));
  int gang = 0;
  const auto planAmong = [&](const std::vector<std::string>& candidates) {
    return bench::summarize(bench::timeCalls(calls, [&] {
      extender::GangMembers members;
      std::vector<PodDemand> pods;
      ++gang;
      for (int member = 0; member < 4; ++member) {
        PodDemand pod = makePod(gang * 4 + member, AllocationUnit::kDevice, 16);
        pod.gang = extender::GangRef{"g" + std::to_string(gang), 4};
        members.apply(pod, "", false);
        pods.push_back(pod);
      }
      const auto result =
          extender::filterGangMember(state, {members, domains}, pods[0], candidates);
      if (result.nodeNames.size() != 1) std::abort();
      for (const PodDemand& pod : pods)
        state.release(pod.uid);  // the next call plans on the same cluster
    }));
  };
  const auto plan = planAmong(nodes);
  // The 500 trn2.48xlarge share no UltraServer or network layer: the plan is any four of them.
  const auto planAnywhere = planAmong({nodes.end() - 500, nodes.end()});
  std::printf(
      "\n# a 4-pod whole-node gang's plan (filter of its first member), 250 UltraServers (1,000 "
      "trn2u.48xlarge, 200 with a node taken) + 500 trn2.48xlarge, %d calls\n",
      calls);
  bench::printHeader("pod_p99_us");
  bench::printRow("one 16-device pod's filter", onePod, onePod);
  bench::printRow("gang of 4: plan + reserve", plan, onePod);
  bench::printRow("... among 500 trn2, no domain", planAnywhere, onePod);
}

// 4. Choosing in filter next to plain filter: one 4-chip pod, the 500 of 5,000 names
// kube-scheduler sends at that size (200 full nodes, 200 partly used, 100 empty), with the holds
// of 64 pods whose binds are in flight. Choosing scores every fitting node around the holds.
void benchChoosingFilter(int calls) {
  extender::ClusterState state;
  (void)extender::addSimulatedNodes(state, {{"trn2.48xlarge", 4000}, {"inf2.48xlarge", 1000}});
  const std::vector<std::string> all = state.nodeNames();
  std::vector<std::string> trn2;
  for (const std::string& name : all) {
    if (name.find("trn2") != std::string::npos) trn2.push_back(name);
  }
  int id = 0;
  std::vector<std::string> names;
  for (int i = 0; i < 500; ++i) {
    const std::string& name = trn2[static_cast<std::size_t>(i)];
    const int pods = i < 200 ? 4 : i < 400 ? 1 + i % 3 : 0;
    for (int p = 0; p < pods; ++p) {
      if (!state.reserve(name, makePod(++id, AllocationUnit::kDevice, 4)).ok()) std::abort();
    }
    names.push_back(name);
  }
  extender::HeldCores held;
  for (int i = 0; i < 64; ++i) {
    const std::string& name = names[200 + static_cast<std::size_t>(i) * 3];
    held[name] = extender::freeIds(*state.node(name), AllocationUnit::kCore);
  }
  const PodDemand pod = makePod(++id, AllocationUnit::kDevice, 4);
  const auto plain = bench::summarize(bench::timeCalls(calls, [&] {
    if (extender::filter(state, pod, names).nodeNames.size() != 300) std::abort();
  }));
  const auto choosing = bench::summarize(bench::timeCalls(calls, [&] {
    std::optional<extender::ExpectedPlacement> best;
    if (extender::filterChoosing(state, pod, names, held, best).nodeNames.size() != 1 || !best)
      std::abort();
  }));
  std::printf(
      "\n# one 4-chip pod's filter over 500 of 5,000 nodes (200 full, 200 partly used, 100 "
      "empty), 64 nodes with holds, %d calls\n",
      calls);
  bench::printHeader("plain_p99_us");
  bench::printRow("plain filter", plain, plain);
  bench::printRow("filter that chooses", choosing, plain);
}

// 5. Preempt on a full cluster: 20,000 pods seen running, a 16-chip pod of higher priority, and
// kube-scheduler's proposal of every pod on 500 of the nodes. The baseline answers the same
// proposal asking the state node by node (a pass over all 20,000 allocations each time).
void benchPreempt(int calls) {
  extender::ClusterState state;
  (void)extender::addSimulatedNodes(state, {{"trn2.48xlarge", 5000}});
  const std::vector<std::string> all = state.nodeNames();
  int id = 0;
  for (const std::string& name : all) {
    for (int first = 0; first < 16; first += 4) {
      const std::string range = std::to_string(first) + "-" + std::to_string(first + 3);
      if (!state
               .record(name, makePod(++id, AllocationUnit::kDevice, 4),
                       *topology::CoreSet::parse(range))
               .ok())
        std::abort();
    }
  }
  std::map<std::string, std::vector<std::string>> proposal;
  for (std::size_t i = 0; i < 500; ++i) {
    const std::string& name = all[i * 10];
    for (const extender::Allocation& held : state.allocationsOn(name))
      proposal[name].push_back(held.podUid);
  }
  PodDemand pod = makePod(++id, AllocationUnit::kDevice, 16);
  pod.priority = 1000;
  const auto nodeByNode = bench::summarize(bench::timeCalls(calls, [&] {
    std::size_t answered = 0;
    for (const auto& [node, victims] : proposal) {
      if (extender::chooseVictims(*state.node(node), state.allocationsOn(node), pod, victims))
        ++answered;
    }
    if (answered != 500) std::abort();
  }));
  const auto onePass = bench::summarize(bench::timeCalls(calls, [&] {
    if (extender::preempt(state, pod, proposal).size() != 500) std::abort();
  }));
  std::printf(
      "\n# preempt for a 16-chip pod, 5,000 full trn2.48xlarge (20,000 pods), victims proposed on "
      "500, %d calls\n",
      calls);
  bench::printHeader("by_node_p99_us");
  bench::printRow("node by node (before)", nodeByNode, nodeByNode);
  bench::printRow("preempt verb, one pass", onePass, nodeByNode);
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = torus::bench::intFlag(argc, argv, "calls", 200);
  const int tracePods = torus::bench::intFlag(argc, argv, "pods", 6000);
  log::configure({log::Level::kError, 0, log::Format::kText});

  // 1. Latency at 5,000 nodes over HTTP.
  extender::ClusterState state;
  (void)extender::addSimulatedNodes(state, {{"trn2.48xlarge", 4000}, {"inf2.48xlarge", 1000}});
  extender::PodCache pods;
  extender::VerbMetrics metrics;
  auto routes = extender::extenderRoutes("", {state, pods, metrics, false});
  routes.push_back({"POST", "/echo", [](const http::Request& request) {
                      return http::Response{200, "application/json", request.body};
                    }});
  http::ServerOptions options;
  options.address = {"127.0.0.1", 0};
  auto server = http::HttpServer::start(options, std::move(routes));
  if (!server) return 1;
  const int port = (*server)->port();
  nlohmann::json names = state.nodeNames();
  const auto requestFor = [&](int id) {
    return nlohmann::json{
        {"Pod",
         {{"metadata",
           {{"name", "p" + std::to_string(id)},
            {"namespace", "bench"},
            {"uid", "u" + std::to_string(id)}}},
          {"spec",
           {{"containers",
             {{{"resources", {{"limits", {{"aws.amazon.com/neuroncore", "8"}}}}}}}}}}}},
        {"NodeNames", names}}
        .dump();
  };
  const std::string body = requestFor(0);
  const auto echo = bench::summarize(bench::timeCalls(calls, [&] {
    if (!testing::httpPost(port, "/echo", body)) std::abort();
  }));
  int pod = 0;
  const auto filterPrioritize = bench::summarize(bench::timeCalls(calls, [&] {
    const std::string request = requestFor(++pod);
    if (!testing::httpPost(port, "/filter", request)) std::abort();
    if (!testing::httpPost(port, "/prioritize", request)) std::abort();
  }));
  // What nodeCacheCapable saves: the same filter over the 500 nodes kube-scheduler sends at this
  // size, by name (nodeCacheCapable: true, the chart's) and as whole Node objects (false), each a
  // real kubelet's Node (tests/fixtures/captures) under a simulated node's name.
  auto captured =
      readSmallFile(std::string(TORUS_SOURCE_DIR) +
                        "/tests/fixtures/captures/filter-real-kubelet-node.request.json",
                    1 << 20);
  if (!captured) return 1;
  const nlohmann::json nodeTemplate = nlohmann::json::parse(*captured)["Nodes"]["items"][0];
  nlohmann::json sampled = nlohmann::json::array();
  nlohmann::json nodeList = {
      {"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", nlohmann::json::array()}};
  for (std::size_t i = 0; i < 500; ++i) {
    const std::string& name = names[i * 10].get_ref<const std::string&>();
    sampled.push_back(name);
    nlohmann::json node = nodeTemplate;
    node["metadata"]["name"] = name;
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
    node["metadata"]["labels"]["node.kubernetes.io/instance-type"] =
        std::string(state.node(name)->model.catalog->name);
    nodeList["items"].push_back(std::move(node));
  }
  // Built once, outside the timing; each call is a new pod (its uid in place of the template's).
  const auto filterRequest = [&](bool fullNodes) {
    nlohmann::json request = nlohmann::json::parse(requestFor(0));
    request["Pod"]["metadata"]["uid"] = "uid-template-00000";
    request["NodeNames"] = fullNodes ? nlohmann::json(nullptr) : sampled;
    request["Nodes"] = fullNodes ? nodeList : nlohmann::json(nullptr);
    return request.dump();
  };
  const auto forPod = [](std::string request, int id) {
    char uid[16];
    std::snprintf(uid, sizeof uid, "%05d", id % 100000);
    request.replace(request.find("uid-template-00000") + 13, 5, uid);
    return request;
  };
  const std::string byName = filterRequest(false);
  const std::string byObject = filterRequest(true);
  const auto timeFilter = [&](const std::string& request) {
    std::vector<std::string> requests;
    for (int call = 0; call < calls; ++call)
      requests.push_back(forPod(request, ++pod));
    std::size_t next = 0;
    return bench::summarize(bench::timeCalls(calls, [&] {
      if (!testing::httpPost(port, "/filter", requests[next++])) std::abort();
    }));
  };
  const auto filterByName = timeFilter(byName);
  const auto filterByObject = timeFilter(byObject);
  int bound = 0;
  const auto bindLatency = bench::summarize(bench::timeCalls(calls, [&] {
    ++bound;
    const nlohmann::json binding = {{"PodName", "p" + std::to_string(bound)},
                                    {"PodNamespace", "bench"},
                                    {"PodUID", "u" + std::to_string(bound)},
                                    {"Node", "sim-trn2.48xlarge-" + std::to_string(bound % 4000)}};
    if (!testing::httpPost(port, "/bind", binding.dump())) std::abort();
  }));
  std::printf(
      "# extender over HTTP, one 8-core pod, 5,000 nodes (4,000 trn2.48xlarge + 1,000 "
      "inf2.48xlarge) by name, %d calls, request %zu bytes\n",
      calls, body.size());
  bench::printHeader("echo_p99_us");
  bench::printRow("echo of the same body", echo, echo);
  bench::printRow("filter + prioritize", filterPrioritize, echo);
  bench::printRow("bind", bindLatency, echo);
  std::printf(
      "\n# filter over 500 of the 5,000 nodes: by name (nodeCacheCapable: true, %zu bytes) and as "
      "Node objects (false, %zu bytes: %.0fx)\n",
      byName.size(), byObject.size(),
      static_cast<double>(byObject.size()) / static_cast<double>(byName.size()));
  bench::printHeader("names_p99_us");
  bench::printRow("filter, node names", filterByName, filterByName);
  bench::printRow("filter, Node objects", filterByObject, filterByName);
  (*server)->stop();

  // 2. Churn: the same trace through our verbs and through first fit.
  std::mt19937 random(42);
  struct Event {
    bool arrive;
    int id;
    AllocationUnit unit;
    int count;
  };
  std::vector<Event> trace;
  std::vector<int> live;
  const int coreSizes[] = {1, 2, 4, 8, 16, 32, 64};
  const int deviceSizes[] = {1, 2, 3, 4, 8, 16};
  for (int id = 0; id < tracePods; ++id) {
    if (!live.empty() && random() % 3 == 0) {
      const std::size_t index = random() % live.size();
      trace.push_back({false, live[index], AllocationUnit::kCore, 0});
      live.erase(live.begin() + static_cast<long>(index));
    }
    const bool devices = random() % 3 == 0;
    const int count = devices ? deviceSizes[random() % std::size(deviceSizes)]
                              : coreSizes[random() % std::size(coreSizes)];
    trace.push_back({true, id, devices ? AllocationUnit::kDevice : AllocationUnit::kCore, count});
    live.push_back(id);
  }

  const auto run = [&](int policy) {
    const bool ours = policy == 0;
    extender::ClusterState cluster;
    (void)extender::addSimulatedNodes(cluster, {{"trn2.48xlarge", 256}, {"inf2.48xlarge", 64}});
    const std::vector<std::string> nodeNames = cluster.nodeNames();
    long totalCores = 0;
    for (const std::string& name : nodeNames) {
      totalCores += cluster.node(name)->model.logicalCoreCount();
    }
    long usedCores = 0;
    int placed = 0;
    int rejected = 0;
    int placedBeforeFirstRejection = -1;
    int onAllowedShapes = 0;
    double utilizationSum = 0;
    for (const Event& event : trace) {
      const PodDemand demand = makePod(event.id, event.unit, event.count);
      if (!event.arrive) {
        if (auto held = cluster.allocationOf(demand.uid)) usedCores -= held->cores.size();
        cluster.release(demand.uid);
        continue;
      }
      bool ok = false;
      if (ours) {
        const auto passed = extender::filter(cluster, demand, nodeNames).nodeNames;
        if (!passed.empty()) {
          const auto scores = extender::prioritize(cluster, demand, passed);
          const auto best =
              std::max_element(scores.begin(), scores.end(),
                               [](const auto& a, const auto& b) { return a.score < b.score; });
          ok = extender::bindPod(cluster, demand, best->host).ok();
        }
      } else if (policy == 1) {
        ok = firstFit(cluster, nodeNames, demand);
      } else {
        ok = countingScheduler(cluster, nodeNames, demand, policy == 3);
      }
      if (ok) {
        const auto allocation = *cluster.allocationOf(demand.uid);
        const auto model = cluster.node(allocation.node)->model;
        usedCores += allocation.cores.size();
        const bool allowed =
            demand.unit == AllocationUnit::kDevice
                ? topology::isAllowedDeviceSet(topology::shapeRulesOf(model), allocation.ids)
                : allocation.cores.isContiguous();
        onAllowedShapes += allowed ? 1 : 0;
        ++placed;
      } else {
        ++rejected;
        if (placedBeforeFirstRejection < 0) placedBeforeFirstRejection = placed;
      }
      utilizationSum += static_cast<double>(usedCores) / static_cast<double>(totalCores);
    }
    const double utilization = 100.0 * utilizationSum / static_cast<double>(tracePods);
    const char* policyNames[] = {"torus", "topo-first-fit", "count-first-fit", "count-spread"};
    std::printf("%-12s %10d %10d %18d %14.1f %% %12.1f %%\n", policyNames[policy], placed, rejected,
                placedBeforeFirstRejection, placed == 0 ? 0.0 : 100.0 * onAllowedShapes / placed,
                utilization);
    return utilization;
  };
  std::printf("\n# churn trace: %zu events, 256 trn2.48xlarge + 64 inf2.48xlarge\n", trace.size());
  std::printf("%-12s %10s %10s %18s %16s %14s\n", "policy", "placed", "rejected",
              "placed_before_1st", "allowed_shapes", "mean_util");
  const double ours = run(0);
  const double baseline = run(1);
  const double countFirst = run(2);
  const double countSpread = run(3);
  std::printf("utilization difference vs topo-first-fit: %+.1f points (target >= +10)\n",
              ours - baseline);
  std::printf("utilization difference vs count-first-fit: %+.1f points, vs count-spread: %+.1f\n",
              ours - countFirst, ours - countSpread);
  benchGangPlan(calls);
  benchChoosingFilter(calls);
  benchPreempt(calls);
  return 0;
}
