// Device plugin benchmark: GetPreferredAllocation and Allocate latency over the real unix socket,
// next to a plain gRPC unary call (an empty Register on a server of the same kind) measured in the
// same run; then the agent binary's RSS and idle CPU while registered with a kubelet stand-in.
//
//   build/tests/device_plugin_bench [--calls=N] [--idle-seconds=S]
//
// Targets: p99 <= 1 ms and <= 3x the echo p99; RSS <= 25 MiB; idle CPU
// <= 0.2 % of a core.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/temp_dir.h"
#include "common/topology/placement.h"
#include "device-plugin/plugin_manager.h"
#include "node-runtime/agent/plugin_node_view.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/simulator/sim_tree.h"
#include "tests/bench/bench_stats.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace {

using namespace std::chrono_literals;
using torus::bench::LatencySummary;

class EchoRegistration final : public v1beta1::Registration::Service {
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest*,
                        v1beta1::Empty*) override {
    return grpc::Status::OK;
  }
};

struct ProcessSample {
  long rssKiB = 0;
  double cpuSeconds = 0;
};

ProcessSample sampleProcess(pid_t pid) {
  ProcessSample sample;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) sample.rssKiB = std::stol(line.substr(6));
  }
  std::ifstream statFile("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(statFile)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long ticks = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14 || index == 15) ticks += std::stol(field);  // utime, stime
    if (index == 15) break;
  }
  sample.cpuSeconds = static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return sample;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = torus::bench::intFlag(argc, argv, "calls", 5000);
  const int idleSeconds = torus::bench::intFlag(argc, argv, "idle-seconds", 60);
  torus::log::configure({torus::log::Level::kError, 0, torus::log::Format::kText});
  auto dir = torus::TempDir::create("dp-bench");
  if (!dir) return 1;
  const std::string pluginDir = (dir->path() / "plugins").string();
  std::filesystem::create_directories(pluginDir);

  // 1. Latency over the socket, in process.
  torus::simulator::SimulationSpec spec;
  spec.instanceType = "trn2.48xlarge";
  auto tree = torus::simulator::writeSimulatedTree(spec, dir->path() / "node");
  auto found = torus::discovery::discoverNode(tree->roots(), {});
  if (!tree || !found) return 1;
  const std::string podResources = (dir->path() / "pod-resources.sock").string();
  torus::testing::FakeKubelet kubelet(pluginDir, podResources);
  kubelet.start();
  torus::health::NodeMonitor monitor(tree->roots(), {}, *found, 500ms);
  torus::agent::PluginNodeView view(monitor, {});
  torus::plugin::DevicePluginOptions options;
  options.pluginDir = pluginDir;
  options.podResourcesSocket = podResources;
  auto manager = std::make_unique<torus::plugin::DevicePluginManager>(options, view);
  if (!manager->start() || !kubelet.waitForRegistration("aws.amazon.com/neuroncore", 1, 5s)) {
    std::fprintf(stderr, "plugin did not register\n");
    return 1;
  }
  auto plugin = kubelet.pluginClient("aws.amazon.com/neuroncore");

  EchoRegistration echo;
  grpc::ServerBuilder builder;
  const std::string echoSocket = (dir->path() / "echo.sock").string();
  builder.AddListeningPort("unix://" + echoSocket, grpc::InsecureServerCredentials());
  builder.RegisterService(&echo);
  auto echoServer = builder.BuildAndStart();
  auto echoClient = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix://" + echoSocket, grpc::InsecureChannelCredentials()));

  v1beta1::PreferredAllocationRequest preferred;
  auto* container = preferred.add_container_requests();
  for (int id = 63; id >= 0; --id)
    container->add_available_deviceids(std::to_string(id));
  container->set_allocation_size(4);
  v1beta1::AllocateRequest allocate;
  for (const char* id : {"4", "5", "6", "7"})
    allocate.add_container_requests()->add_devices_ids(id);

  const auto callEcho = [&] {
    grpc::ClientContext context;
    v1beta1::Empty response;
    echoClient->Register(&context, v1beta1::RegisterRequest(), &response);
  };
  const auto callPreferred = [&] {
    grpc::ClientContext context;
    v1beta1::PreferredAllocationResponse response;
    if (!plugin->GetPreferredAllocation(&context, preferred, &response).ok()) std::abort();
  };
  const auto callAllocate = [&] {
    grpc::ClientContext context;
    v1beta1::AllocateResponse response;
    if (!plugin->Allocate(&context, allocate, &response).ok()) std::abort();
  };
  for (int i = 0; i < 200; ++i) {  // warm up connections and caches
    callEcho();
    callPreferred();
    callAllocate();
  }
  const LatencySummary echoStats =
      torus::bench::summarize(torus::bench::timeCalls(calls, callEcho));
  const LatencySummary preferredStats =
      torus::bench::summarize(torus::bench::timeCalls(calls, callPreferred));
  const LatencySummary allocateStats =
      torus::bench::summarize(torus::bench::timeCalls(calls, callAllocate));

  std::printf("# device plugin over a unix socket, trn2.48xlarge (64 cores), %d calls each\n",
              calls);
  torus::bench::printHeader("echo_p99_us");
  torus::bench::printRow("echo (baseline)", echoStats, echoStats);
  torus::bench::printRow("GetPreferredAllocation", preferredStats, echoStats);
  torus::bench::printRow("Allocate", allocateStats, echoStats);
  manager.reset();

  // The pure decision alone, without gRPC.
  const LatencySummary placementStats = torus::bench::summarize(torus::bench::timeCalls(calls, [&] {
    (void)torus::topology::choosePlacement(
        found->node, {torus::topology::AllocationUnit::kCore, 4, found->node.allCores(), {}});
  }));
  std::printf("%-26s %10.1f %10.1f %10.1f\n", "choosePlacement (no RPC)", placementStats.minUs,
              placementStats.p50Us, placementStats.p99Us);

  // What one health refresh costs: the NodeMonitor re-runs discovery every --health-interval.
  const LatencySummary discoveryStats = torus::bench::summarize(torus::bench::timeCalls(
      200, [&] { (void)torus::discovery::discoverNode(tree->roots(), {}); }));
  std::printf("%-26s %10.1f %10.1f %10.1f\n", "discovery pass (health)", discoveryStats.minUs,
              discoveryStats.p50Us, discoveryStats.p99Us);

  // 2. The agent binary at rest: registered, nothing happening.
  const std::string agentDir = (dir->path() / "agent-plugins").string();
  std::filesystem::create_directories(agentDir);
  torus::testing::FakeKubelet agentKubelet(agentDir, (dir->path() / "agent-pr.sock").string());
  agentKubelet.start();
  torus::testing::BackgroundProcess agent(
      {torus::testing::binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
       "--device-plugin-dir=" + agentDir, "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
       "--pod-resources-socket=" + (dir->path() / "agent-pr.sock").string()});
  if (!agentKubelet.waitForRegistration("aws.amazon.com/neuron", 1, 20s)) {
    std::fprintf(stderr, "agent did not register:\n%s\n", agent.stderrText().c_str());
    return 1;
  }
  std::this_thread::sleep_for(2s);  // let startup work finish before measuring rest
  const pid_t pid = agent.pid();
  const ProcessSample before = sampleProcess(pid);
  std::this_thread::sleep_for(std::chrono::seconds(idleSeconds));
  const ProcessSample after = sampleProcess(pid);
  const double idlePercent = 100.0 * (after.cpuSeconds - before.cpuSeconds) / idleSeconds;
  std::printf("\n# neuron-node-agent --simulate=trn2.48xlarge, registered, idle for %d s\n",
              idleSeconds);
  std::printf("%-26s %10.1f MiB   (target <= 25 MiB)\n", "resident memory (VmRSS)",
              static_cast<double>(after.rssKiB) / 1024.0);
  std::printf("%-26s %10.3f %%     (target <= 0.2 %% of a core; clock tick %ld Hz)\n", "idle CPU",
              idlePercent, sysconf(_SC_CLK_TCK));
  agent.signal(SIGTERM);
  agent.waitExit(10s);
  return 0;
}
