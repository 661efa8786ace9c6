// UltraServer workloads at scale: 250 UltraServers of four trn2u nodes (1,000 nodes) beside 500
// trn2 nodes, and a trace of 200 multi-node jobs (1, 2 or 4 nodes per UltraServer; some on
// several UltraServers) arriving and leaving. The same trace runs twice in this process:
//
//   operator     the allocator neuron-ultraserver-operator runs (model/allocator.h), two passes
//                per change as the controller makes them (record Pending, confirm Bound); a job
//                starts when its workload is Allocated;
//   pod by pod   the baseline: each pod placed on its own as kube-scheduler places whole-node pods
//                with no topology rule (any free node of the type: every empty node scores the
//                same, so the pick among them is arbitrary — random here, seeded); a job starts
//                once all its pods are bound, and a bound pod holds its node meanwhile.
//
// Printed: the allocator's time per pass (wall clock, this machine), jobs' waits (trace time),
// NeuronLink groups split across UltraServers or pairs (a 4-node group on nodes of different
// UltraServers cannot use NeuronLink between them), node time held by jobs that have not
// started, UltraServers left partly used, and the baseline's figures over the operator's (ratio).
// With --plot=FILE it writes a plot spec (tests/bench/plot.py) of the UltraServers left partly in
// use over time by each path, beside the load.
//
//   build/tests/ultraserver_bench [--seed=N] [--plot=FILE.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/contracts/neuron_names.h"
#include "ultraserver-operator/model/allocator.h"

namespace {

using torus::ultraserver::Allocation;
using torus::ultraserver::AllocationPlan;
using torus::ultraserver::MemberNode;
using torus::ultraserver::UltraServer;
using torus::ultraserver::Workload;

constexpr int kUltraServers = 250;
constexpr int kTrn2Nodes = 500;  // not UltraServer members: neither path may use them
constexpr int kJobs = 200;
constexpr int kStepLimit = 100'000;

struct Job {
  int id = 0;
  int arrival = 0;
  int duration = 0;
  int size = 1;     // nodes per UltraServer
  int servers = 1;  // UltraServers
  int nodes() const { return size * servers; }
};

std::vector<Job> makeTrace(std::mt19937& random) {
  std::vector<Job> jobs;
  std::exponential_distribution<double> gap(1.0 / 0.7);  // offered ~1.3x the 1,000 nodes
  std::uniform_int_distribution<int> duration(60, 240);
  std::discrete_distribution<int> size({0, 30, 30, 0, 40});                   // 1, 2, 4 nodes
  std::discrete_distribution<int> servers({0, 55, 15, 10, 10, 0, 0, 0, 10});  // 1-4, 8
  double at = 0;
  for (int id = 0; id < kJobs; ++id) {
    at += gap(random);
    Job job;
    job.id = id;
    job.arrival = static_cast<int>(at);
    job.duration = duration(random);
    job.size = size(random);
    job.servers = servers(random);
    jobs.push_back(job);
  }
  return jobs;
}

std::vector<UltraServer> makeCluster() {
  std::vector<MemberNode> members;
  char serverId[20];
  for (int k = 0; k < kUltraServers; ++k) {
    std::snprintf(serverId, sizeof serverId, "%016x", 0x5e7000 + k);
    for (int id = 0; id < 4; ++id) {
      MemberNode node;
      node.name = "us" + std::to_string(k) + "-n" + std::to_string(id);
      node.instanceType = "trn2u.48xlarge";
      node.serverId = serverId;
      node.pairId = std::string(serverId) + (id < 2 ? "-a" : "-b");
      node.nodeId = id;
      node.ready = true;
      members.push_back(node);
    }
  }
  return torus::ultraserver::groupUltraServers(members);
}

struct Outcome {
  std::vector<double> waits;
  int splitGroups = 0;
  int groups = 0;
  double heldIdleNodeSteps = 0;
  double busyNodeSteps = 0;
  std::vector<double> partlyUsed;  // UltraServers with some but not all nodes in use, per step
  int lastStep = 0;
  bool deadlocked = false;
  std::vector<double> timeline;    // nodes running started jobs, per step
  std::vector<double> passMicros;  // operator only
};

std::string timestamp(int step, int id) {
  char text[32];
  std::snprintf(text, sizeof text, "%09d-%05d", step, id);
  return text;
}

int nodeIndex(const std::string& name) {  // "us<k>-n<i>" -> 4k + i
  const auto dash = name.find('-');
  return std::stoi(name.substr(2, dash - 2)) * 4 + std::stoi(name.substr(dash + 2));
}

double partlyUsed(const std::vector<int>& nodeUse) {
  int partly = 0;
  for (int k = 0; k < kUltraServers; ++k) {
    int used = 0;
    for (int i = 0; i < 4; ++i)
      used += nodeUse[static_cast<std::size_t>(4 * k + i)] != 0;
    partly += used > 0 && used < 4;
  }
  return partly;
}

Outcome runOperator(const std::vector<Job>& jobs, const std::vector<UltraServer>& servers) {
  Outcome out;
  std::vector<Allocation> recorded;
  std::map<int, int> started;  // job -> start step
  std::set<int> finished;
  std::size_t next = 0;
  for (int step = 0; step < kStepLimit; ++step) {
    std::vector<Workload> workloads;
    while (next < jobs.size() && jobs[next].arrival <= step)
      ++next;
    for (std::size_t j = 0; j < next; ++j) {
      const Job& job = jobs[j];
      if (finished.count(job.id)) continue;
      if (started.count(job.id) && started[job.id] + job.duration <= step) {
        finished.insert(job.id);
        continue;
      }
      Workload w;
      w.nameSpace = "bench";
      w.name = "job-" + std::to_string(job.id);
      w.createdAt = timestamp(job.arrival, job.id);
      w.instanceType = "trn2u.48xlarge";
      w.topologySize = job.size;
      w.serverCount = job.servers;
      w.claimTemplate = w.name;
      workloads.push_back(w);
    }
    if (finished.size() == jobs.size()) {
      out.lastStep = step;
      break;
    }
    // Two passes per change, as the controller runs them: record, then confirm.
    AllocationPlan plan;
    for (int pass = 0; pass < 2; ++pass) {
      const auto begin = std::chrono::steady_clock::now();
      plan = torus::ultraserver::planAllocations(servers, workloads, recorded, timestamp(step, 0));
      out.passMicros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin)
              .count());
      recorded = plan.allocations;
    }
    std::vector<int> nodeUse(static_cast<std::size_t>(4 * kUltraServers), 0);
    std::set<std::string> startedNow;
    for (const Allocation& allocation : recorded) {
      const int id = std::stoi(allocation.workloadRef.substr(allocation.workloadRef.find('-') + 1));
      if (!started.count(id) && plan.outcomes[allocation.workloadRef].state ==
                                    torus::contracts::WorkloadState::kAllocated) {
        started[id] = step;
        startedNow.insert(allocation.workloadRef);
        out.waits.push_back(step - jobs[static_cast<std::size_t>(id)].arrival);
      }
      for (const std::string& node : allocation.nodes)
        nodeUse[static_cast<std::size_t>(nodeIndex(node))] = 1;
      if (!startedNow.count(allocation.workloadRef)) continue;
      // The allocator's own guarantee, checked as the baseline's is: a group is one UltraServer
      // (and one NeuronLink pair for two nodes).
      ++out.groups;
      std::set<int> ultraServers;
      std::set<int> pairs;
      for (const std::string& node : allocation.nodes) {
        ultraServers.insert(nodeIndex(node) / 4);
        pairs.insert(nodeIndex(node) / 2);
      }
      if (ultraServers.size() != 1 || (allocation.nodes.size() == 2 && pairs.size() != 1)) {
        ++out.splitGroups;
      }
    }
    const double busy = static_cast<double>(std::count(nodeUse.begin(), nodeUse.end(), 1));
    out.busyNodeSteps += busy;
    out.timeline.push_back(busy);
    out.partlyUsed.push_back(partlyUsed(nodeUse));
  }
  return out;
}

Outcome runPodByPod(const std::vector<Job>& jobs, std::mt19937 random) {
  Outcome out;
  const std::size_t nodes = 4 * kUltraServers;
  std::vector<int> owner(nodes, -1);      // job holding the node
  std::map<int, std::vector<int>> bound;  // job -> nodes, in pod order
  std::map<int, int> started;
  std::set<int> finished;
  std::vector<std::pair<int, int>> queue;  // (job, pod index), FIFO
  std::size_t next = 0;
  int stalled = 0;
  for (int step = 0; step < kStepLimit; ++step) {
    for (auto& [id, start] : started) {
      if (!finished.count(id) && start + jobs[static_cast<std::size_t>(id)].duration <= step) {
        finished.insert(id);
        for (const int node : bound[id])
          owner[static_cast<std::size_t>(node)] = -1;
      }
    }
    while (next < jobs.size() && jobs[next].arrival <= step) {
      for (int pod = 0; pod < jobs[next].nodes(); ++pod)
        queue.emplace_back(jobs[next].id, pod);
      ++next;
    }
    if (finished.size() == jobs.size()) {
      out.lastStep = step;
      break;
    }
    std::vector<std::size_t> free;
    for (std::size_t n = 0; n < nodes; ++n) {
      if (owner[n] < 0) free.push_back(n);
    }
    std::vector<std::pair<int, int>> waiting;
    for (const auto& [id, pod] : queue) {
      if (free.empty()) {
        waiting.emplace_back(id, pod);
        continue;
      }
      std::uniform_int_distribution<std::size_t> pick(0, free.size() - 1);
      const std::size_t at = pick(random);
      owner[free[at]] = id;
      bound[id].push_back(static_cast<int>(free[at]));
      free[at] = free.back();
      free.pop_back();
    }
    queue = std::move(waiting);
    bool progressed = false;
    for (auto& [id, nodesOfJob] : bound) {
      const Job& job = jobs[static_cast<std::size_t>(id)];
      if (started.count(id) || static_cast<int>(nodesOfJob.size()) != job.nodes()) continue;
      started[id] = step;
      progressed = true;
      out.waits.push_back(step - job.arrival);
      for (int g = 0; g < job.servers; ++g) {
        ++out.groups;
        std::set<int> ultraServers;
        std::set<int> pairs;
        for (int k = 0; k < job.size; ++k) {
          const int node = nodesOfJob[static_cast<std::size_t>(g * job.size + k)];
          ultraServers.insert(node / 4);
          pairs.insert(node / 2);
        }
        if (ultraServers.size() != 1 || (job.size == 2 && pairs.size() != 1)) ++out.splitGroups;
      }
    }
    std::vector<int> nodeUse(nodes, 0);
    double busy = 0;
    double held = 0;
    for (std::size_t n = 0; n < nodes; ++n) {
      if (owner[n] < 0) continue;
      nodeUse[n] = 1;
      (started.count(owner[n]) ? busy : held) += 1;
    }
    out.busyNodeSteps += busy;
    out.heldIdleNodeSteps += held;
    out.timeline.push_back(busy);
    out.partlyUsed.push_back(partlyUsed(nodeUse));
    // Nothing runs, nothing can be placed, jobs wait holding nodes: no job can ever finish.
    const bool running = std::any_of(started.begin(), started.end(), [&](const auto& entry) {
      return !finished.count(entry.first);
    });
    stalled = (!running && !progressed && held > 0 && free.empty()) ? stalled + 1 : 0;
    if (stalled > 1) {
      out.deadlocked = true;
      out.lastStep = step;
      break;
    }
  }
  return out;
}

double mean(const std::vector<double>& values) {
  double sum = 0;
  for (const double v : values)
    sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 42;
  std::string plotFile;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--seed=", 0) == 0) {
      seed = static_cast<unsigned>(std::stoul(arg.substr(7)));
    } else if (arg.rfind("--plot=", 0) == 0) {
      plotFile = arg.substr(7);
    } else {
      std::fprintf(stderr,
                   "usage: ultraserver_bench [--seed=N] [--plot=FILE.json]\n"
                   "  the UltraServer operator's allocator against pod-by-pod placement on one\n"
                   "  trace of %d jobs, %d UltraServers (%d trn2u nodes) beside %d trn2\n",
                   kJobs, kUltraServers, 4 * kUltraServers, kTrn2Nodes);
      return arg == "--help" ? 0 : 2;
    }
  }
  std::mt19937 random(seed);
  const std::vector<Job> jobs = makeTrace(random);
  const std::vector<UltraServer> servers = makeCluster();
  int demand = 0;
  int multi = 0;
  for (const Job& job : jobs) {
    demand += job.nodes() * job.duration;
    multi += job.servers > 1;
  }
  std::printf(
      "trace: %d jobs (seed %u), %d on several UltraServers; %d UltraServers = %d trn2u "
      "nodes (+%d trn2, not members); offered %.0f node-steps over %d arrival steps\n",
      kJobs, seed, multi, kUltraServers, 4 * kUltraServers, kTrn2Nodes, static_cast<double>(demand),
      jobs.back().arrival);

  const Outcome op = runOperator(jobs, servers);
  const Outcome pods = runPodByPod(jobs, std::mt19937(seed + 1));

  std::vector<double> passes = op.passMicros;
  std::sort(passes.begin(), passes.end());
  const auto pct = [](std::vector<double> values, double p) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(p * static_cast<double>(values.size() - 1))];
  };
  std::printf("\nallocator passes: %zu, p50 %.0f us, p99 %.0f us, max %.0f us (this machine)\n",
              passes.size(), pct(passes, 0.5), pct(passes, 0.99), passes.back());
  std::printf("\n%-44s %12s %12s %8s\n", "figure", "operator", "pod by pod", "ratio");
  const auto row = [](const char* name, double a, double b) {
    std::printf("%-44s %12.1f %12.1f %8s\n", name, a, b,
                a > 0 ? (std::to_string(b / a).substr(0, 5) + "x").c_str() : "-");
  };
  row("jobs started", static_cast<double>(op.waits.size()), static_cast<double>(pods.waits.size()));
  row("wait p50 (steps)", pct(op.waits, 0.5), pct(pods.waits, 0.5));
  row("wait p95 (steps)", pct(op.waits, 0.95), pct(pods.waits, 0.95));
  row("NeuronLink groups split (% of groups)", 100.0 * op.splitGroups / std::max(1, op.groups),
      100.0 * pods.splitGroups / std::max(1, pods.groups));
  row("node-steps held by jobs not started (%)",
      100.0 * op.heldIdleNodeSteps / std::max(1.0, op.busyNodeSteps + op.heldIdleNodeSteps),
      100.0 * pods.heldIdleNodeSteps / std::max(1.0, pods.busyNodeSteps + pods.heldIdleNodeSteps));
  row("UltraServers partly used (mean)", mean(op.partlyUsed), mean(pods.partlyUsed));
  row("steps until the last job ends", op.lastStep, pods.lastStep);
  if (pods.deadlocked) {
    std::printf("pod by pod DEADLOCKED at step %d: every node held by jobs that cannot start\n",
                pods.lastStep);
  }
  if (op.splitGroups != 0) {
    std::fprintf(stderr, "the allocator split a NeuronLink group: a bug\n");
    return 1;
  }
  if (!plotFile.empty()) {
    std::vector<int> steps;
    for (std::size_t s = 0; s < std::max(op.timeline.size(), pods.timeline.size()); ++s)
      steps.push_back(static_cast<int>(s));
    const auto series = [&](const char* name, const std::vector<double>& values) {
      return nlohmann::json{
          {"name", name},
          {"x", std::vector<int>(steps.begin(), steps.begin() + static_cast<long>(values.size()))},
          {"y", values}};
    };
    const auto quarter = [](std::vector<double> values) {
      for (double& v : values)
        v /= 4;
      return values;
    };
    nlohmann::json spec = {
        {"out", plotFile.substr(0, plotFile.rfind('.')) + ".png"},
        {"title", "UltraServers partly in use (fragmented), one trace of 200 jobs"},
        {"xlabel", "trace step"},
        {"ylabel", "UltraServers (of 250)"},
        {"kind", "line"},
        {"series",
         {series("operator", op.partlyUsed), series("pod by pod", pods.partlyUsed),
          series("nodes running jobs / 4 (operator)", quarter(op.timeline))}},
        {"note", "tests/bench/ultraserver_bench.cc, seed " + std::to_string(seed)}};
    std::ofstream(plotFile) << spec.dump() << "\n";
    std::printf(
        "\nplot spec: %s (py=\"$(scripts/bench-venv.sh)\" && \"$py\" tests/bench/plot.py < %s)\n",
        plotFile.c_str(), plotFile.c_str());
  }
  return 0;
}
