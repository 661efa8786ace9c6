// The agent's debug report as `kubectl neuron debug` reads it: a report built by the agent's
// builders (driver files, kernel-log lines, allocations) and archived by the CLI's bundle. A key
// renamed on one side only loses a part of the archive, or a pod or claim, here.
#include "common/contracts/agent_debug_report.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "kubectl-neuron/debug_bundle.h"
#include "node-runtime/agent/debug_report.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::contracts {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json podOn(const std::string& nameSpace, const std::string& name) {
  return {{"metadata", {{"name", name}, {"namespace", nameSpace}}},
          {"spec", {{"nodeName", "n1"}, {"containers", {{{"name", "main"}}}}}}};
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// inf2.24xlarge (six devices), the report asked about device 1: the plugin's train-0 holds its
// cores, a DRA claim holds it for dra-0, and other-0 holds device 2.
TEST(AgentDebugReportContract, TheBundleFindsWhatTheAgentReports) {
  auto dir = TempDir::create("debug-contract");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.24xlarge";
  spec.characterDevices = false;
  auto tree = simulator::writeSimulatedTree(spec, dir->path() / "sys-root");
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  auto found = discovery::discoverNode(tree->roots(), {});
  ASSERT_TRUE(found.ok()) << found.error().message;
  const topology::Node& node = found->node;

  agent::RecentKernelLines kernel;
  kernel.add(1, "HBM_UNCORRECTABLE_ERROR", "nd1 NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR");
  agent::DebugReportInput input;
  input.nodeName = "n1";
  input.node = node;
  input.device = 1;
  input.kernelLogSource = "/dev/kmsg";
  input.kernelLines = kernel.lines();
  input.metrics = "torus_device_healthy{neuron_device_index=\"1\"} 1\n";
  input.driverFiles.assign(node.devices.size(), json(nullptr));
  input.driverFiles[1] = agent::driverFilesOf(tree->roots(), node.devices[1]);
  const auto one = topology::CoreSet::range;  // one id
  input.allocations = agent::allocationsDocument(
      {{"ml/train-0", "main", "aws.amazon.com/neuroncore", one(2, 1), one(2, 1), one(1, 1)},
       {"ml/other-0", "main", "aws.amazon.com/neuroncore", one(4, 1), one(4, 1), one(2, 1)}},
      {{"ml/claim-1",
        "uid-1",
        "neuron.aws.com",
        {"neurondevice1"},
        topology::CoreSet::range(2, 2),
        one(1, 1),
        1,
        {{"ml/dra-0", "main"}}}});
  auto report = agent::debugReport(input);
  ASSERT_TRUE(report.ok()) << report.error().message;

  kubectl_neuron::DebugInputs inputs;
  inputs.node = "n1";
  inputs.device = 1;
  inputs.collectedAt = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
  inputs.agentPod = "kube-system/agent-n1";
  inputs.agentReport = *report;
  inputs.nodeObject = json{{"metadata", {{"name", "n1"}}}};
  inputs.events = json{{"items", json::array()}};
  inputs.pods =
      json{{"items", {podOn("ml", "train-0"), podOn("ml", "dra-0"), podOn("ml", "other-0")}}};
  inputs.claims = json{{"items",
                        {{{"metadata", {{"name", "claim-1"}, {"namespace", "ml"}}}},
                         {{"metadata", {{"name", "claim-2"}, {"namespace", "ml"}}}}}}};
  inputs.slices = json{{"items", json::array()}};
  const kubectl_neuron::DebugBundle bundle = kubectl_neuron::buildDebugBundle(inputs);
  EXPECT_TRUE(bundle.complete()) << bundle.manifest.dump(2);

  ASSERT_TRUE(writeFile(dir->path() / "bundle.tar", bundle.tar).ok());
  const std::string command =
      "tar -mxf '" + (dir->path() / "bundle.tar").string() + "' -C '" + dir->path().string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const fs::path top = dir->path() / bundle.directory;

  // devices[].driver: its files as a tree, the rest in driver.json.
  const fs::path device = fs::canonical(tree->roots().deviceDir(1));
  EXPECT_EQ(readFile(top / "devices/neuron1/sys/core_count"), readFile(device / "core_count"));
  const json driver = json::parse(readFile(top / "devices/neuron1/driver.json"));
  EXPECT_FALSE(driver.contains(debug_report::kDriverFiles));
  EXPECT_FALSE(fs::exists(top / "devices/neuron0"));
  // kernelLog.lines[]: seenAt, device, type, line.
  const json& lines = (*report)[debug_report::kKernelLog][debug_report::kKernelLogLines];
  ASSERT_EQ(lines.size(), 1U) << report->dump(2);
  const json& line = lines[0];
  ASSERT_TRUE(line.contains(debug_report::kLineSeenAt)) << line.dump();
  EXPECT_EQ(readFile(top / "agent/kernel-log.txt"),
            line[debug_report::kLineSeenAt].get<std::string>() +
                " device=1 HBM_UNCORRECTABLE_ERROR: nd1 NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR\n");
  EXPECT_EQ(readFile(top / "agent/metrics.txt"), input.metrics);
  EXPECT_EQ(json::parse(readFile(top / "agent/allocations.json")), input.allocations);
  // The state keeps the report but what went to files of their own.
  const json state = json::parse(readFile(top / "agent/state.json"));
  EXPECT_FALSE(state.contains(debug_report::kMetrics));
  EXPECT_FALSE(state[debug_report::kKernelLog].contains(debug_report::kKernelLogLines));
  EXPECT_EQ(state[debug_report::kDevices][0][debug_report::kDeviceIndex], 1);

  // allocations: the plugin's holder and the claim's user on device 1, and the claim; not the
  // pod on device 2 nor the other claim.
  std::set<std::string> pods, claims;
  for (const json& pod : json::parse(readFile(top / "cluster/pods.json")))
    pods.insert(pod["metadata"]["name"].get<std::string>());
  for (const json& claim : json::parse(readFile(top / "cluster/claims.json")))
    claims.insert(claim["metadata"]["name"].get<std::string>());
  EXPECT_EQ(pods, (std::set<std::string>{"dra-0", "train-0"}));
  EXPECT_EQ(claims, (std::set<std::string>{"claim-1"}));
}

}  // namespace
}  // namespace torus::contracts
