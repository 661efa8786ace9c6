// The deep check through the agent's real interfaces: `neuron-node-agent check` (tables, --json,
// exit codes) and a running agent's POST/GET /deep-check, whose failures take the named devices
// out of service (/metrics, logs) and whose later pass brings them back.
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "tests/integration/node_runtime/driver_served_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<std::string> kSmallCheck = {"--deep-check-memory-bytes=262144",
                                              "--deep-check-host-allreduce-bytes=262144"};

std::vector<std::string> checkCommand(std::vector<std::string> args) {
  std::vector<std::string> command = {binaryPath("neuron-node-agent"), "check", "--log-level=warn"};
  command.insert(command.end(), kSmallCheck.begin(), kSmallCheck.end());
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

// An agent on a simulated inf2.48xlarge (its tree in `sim`) with the small check, its metrics and
// admin ports read from its log (0 when it did not start).
struct RunningAgent {
  std::unique_ptr<BackgroundProcess> process;
  int port = 0;
  int adminPort = 0;
};

RunningAgent startAgent(const fs::path& sim, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {binaryPath("neuron-node-agent"),  "--simulate=inf2.48xlarge",
                                   "--simulate-dir=" + sim.string(), "--device-plugin=false",
                                   "--metrics-addr=127.0.0.1:0",     "--admin-addr=127.0.0.1:0"};
  args.insert(args.end(), kSmallCheck.begin(), kSmallCheck.end());
  args.insert(args.end(), extra.begin(), extra.end());
  RunningAgent agent{std::make_unique<BackgroundProcess>(args)};
  if (const auto log = agent.process->waitForStderr("\"serving admin HTTP\"", 10s)) {
    agent.port = loggedPort(*log, "\"serving HTTP\"");
    agent.adminPort = loggedPort(*log, "\"serving admin HTTP\"");
  }
  return agent;
}

TEST(DeepCheckCommand, HealthyNodePassesWithExitZero) {
  const ProcessResult run = runProcess(checkCommand({"--simulate=inf2.48xlarge"}), 30s);
  EXPECT_EQ(run.exitCode, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("Deep check passed"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("| 0-1 "), std::string::npos) << run.out;
}

TEST(DeepCheckCommand, LinkCutExitsOneAndTheJsonNamesThePair) {
  const ProcessResult run = runProcess(
      checkCommand({"--simulate=trn1.32xlarge", "--simulate-fault=link-cut:3-7", "--json"}), 30s);
  EXPECT_EQ(run.exitCode, 1) << run.err;
  const auto json = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << run.out;
  EXPECT_FALSE(json["passed"].get<bool>());
  ASSERT_EQ(json["failures"].size(), 1U) << run.out;
  EXPECT_EQ(json["failures"][0].get<std::string>(),
            "NeuronLink 3-7 is down: neuron3 and neuron7 no longer list each other in "
            "connected_devices");
  EXPECT_EQ(json["devices"].size(), 16U);
  EXPECT_EQ(json["hostAllReduce"]["ring"].size(), 16U);
  // Nothing on a simulated node without a command drives the links, and the driver reports no
  // link speed: both say so rather than pass.
  ASSERT_EQ(json["notChecked"].size(), 2U) << run.out;
  EXPECT_EQ(json["notChecked"][0]["part"], "link_speed");
  EXPECT_EQ(json["notChecked"][1]["part"], "neuronlink_traffic");
  EXPECT_TRUE(json["command"].is_null());
}

TEST(DeepCheckCommand, TheTableSaysWhatWasNotCheckedAndRunsTheCommand) {
  const ProcessResult plain = runProcess(checkCommand({"--simulate=inf2.48xlarge"}), 30s);
  EXPECT_NE(plain.out.find("Not checked: neuronlink traffic (no --deep-check-command"),
            std::string::npos)
      << plain.out;
  const ProcessResult failing = runProcess(
      checkCommand({"--simulate=inf2.48xlarge", "--deep-check-command=echo broken ring; exit 4"}),
      30s);
  EXPECT_EQ(failing.exitCode, 1) << failing.out << failing.err;
  EXPECT_NE(failing.out.find("Check command (echo broken ring; exit 4): FAILED"), std::string::npos)
      << failing.out;
  EXPECT_NE(failing.out.find("exited 4"), std::string::npos) << failing.out;
}

TEST(DeepCheckCommand, NodeThatCannotBeCheckedExitsTwo) {
  const ProcessResult run = runProcess(checkCommand({"--simulate=no-such-type"}), 30s);
  EXPECT_EQ(run.exitCode, 2);
  EXPECT_NE(run.err.find("unknown instance type \"no-such-type\""), std::string::npos) << run.err;
}

TEST(DeepCheckAgent, PostFailsTheNamedDeviceAndALaterPassBringsItBack) {
  // The device that passes again is reset before it returns: the simulated driver takes resets.
  if (auto why = DriverServedTree::unusableBecause()) GTEST_SKIP() << *why;
  auto dir = TempDir::create("deep-check-agent");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.48xlarge";
  auto served = DriverServedTree::start(spec, dir->path() / "served");
  ASSERT_TRUE(served.ok()) << served.error().message;
  const fs::path sim = (*served)->view();
  RunningAgent running =
      startAgent(sim, {"--simulate-fault=mem-corrupt:5", "--health-interval=100ms"});
  BackgroundProcess& agent = *running.process;
  ASSERT_GT(running.adminPort, 0) << agent.stderrText();
  const int port = running.port;
  const int adminPort = running.adminPort;

  EXPECT_EQ(httpGet(port, "/deep-check")->substr(0, 3), "404");
  // Running a check is not for whoever reaches the metrics port.
  const auto refused = httpPost(port, "/deep-check", "");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->substr(0, 3), "403");
  EXPECT_NE(refused->find("--admin-addr"), std::string::npos) << *refused;
  EXPECT_EQ(httpGet(port, "/deep-check")->substr(0, 3), "404");  // and it ran nothing

  const auto failed = httpPost(adminPort, "/deep-check", "");
  ASSERT_TRUE(failed.has_value());
  ASSERT_EQ(failed->substr(0, 3), "200");
  const auto json = nlohmann::json::parse(failed->substr(4), nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << *failed;
  EXPECT_FALSE(json["passed"].get<bool>());
  EXPECT_NE(json["failures"][0].get<std::string>().find("neuron5 device memory"),
            std::string::npos);
  EXPECT_EQ(*httpGet(port, "/deep-check"), *failed);

  const std::string healthy5 =
      "torus_device_healthy{instance_type=\"inf2.48xlarge\","
      "neuron_device_index=\"5\",pod=\"\",namespace=\"\",container=\"\","
      "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_name=\"\",dra_"
      "driver_name=\"\"} ";
  const auto metric = [&](const std::string& series) {
    const std::string text = httpGet(port, "/metrics").value_or("");
    const std::size_t at = text.find("\n" + series);  // a sample line, not its # HELP
    return at == std::string::npos ? std::string("absent") : text.substr(at + 1 + series.size(), 1);
  };
  EXPECT_TRUE(eventually([&] { return metric(healthy5) == "0"; }, 5s));
  EXPECT_EQ(metric("torus_deep_check_device_passed{neuron_device_index=\"5\"} "), "0");
  EXPECT_EQ(metric("torus_deep_check_device_passed{neuron_device_index=\"4\"} "), "1");
  EXPECT_EQ(metric("torus_deep_check_runs_total{result=\"failed\"} "), "1");
  EXPECT_EQ(metric("torus_deep_check_last_success_timestamp_seconds "), "absent");
  EXPECT_TRUE(agent
                  .waitForStderr("\"device unhealthy\" device=5 reason=\"deep check: neuron5 "
                                 "device memory",
                                 5s)
                  .has_value())
      << agent.stderrText();

  // The memory reads back again (resource4_wc aliases resource4 once more): the next check passes.
  auto found = discovery::discoverNode(discovery::DiscoveryRoots::under(sim), {});
  ASSERT_TRUE(found.ok());
  const fs::path function = sim / "sys" / "bus" / "pci" / "devices" / found->node.devices[5].pciBdf;
  fs::remove(function / "resource4_wc");
  fs::create_hard_link(function / "resource4", function / "resource4_wc");
  // As an operator types it (`curl -X POST`): no body and no Content-Length.
  const auto passed = httpPostNoBody(adminPort, "/deep-check");
  ASSERT_TRUE(passed.has_value()) << "no answer to a POST without Content-Length";
  EXPECT_NE(passed->find("\"passed\": true"), std::string::npos) << *passed;
  EXPECT_TRUE(eventually([&] { return metric(healthy5) == "1"; }, 5s));
  EXPECT_NE(metric("torus_deep_check_last_success_timestamp_seconds "), "absent");
  EXPECT_TRUE(agent.waitForStderr("\"device healthy again\" device=5", 5s).has_value());

  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
}

// Regression: twelve concurrent POSTs ran twelve checks back to back (20 s of CPU on both cores).
TEST(DeepCheckAgent, ConcurrentRequestsShareTheRunInProgress) {
  auto dir = TempDir::create("deep-check-agent");
  ASSERT_TRUE(dir.ok());
  RunningAgent running = startAgent(dir->path() / "sim");
  BackgroundProcess& agent = *running.process;
  ASSERT_GT(running.adminPort, 0) << agent.stderrText();
  const int port = running.port;
  const int adminPort = running.adminPort;

  std::vector<std::string> answers(12);
  {
    std::vector<std::jthread> callers;
    for (std::size_t i = 0; i < answers.size(); ++i) {
      callers.emplace_back(
          [&, i] { answers[i] = httpPost(adminPort, "/deep-check", "").value_or("none"); });
    }
  }
  std::set<std::string> distinct;
  for (const std::string& answer : answers) {
    ASSERT_EQ(answer.substr(0, 3), "200") << answer;
    distinct.insert(answer);
  }
  // All twelve arrive within milliseconds of each other; at most one may miss the first run.
  EXPECT_LE(distinct.size(), 2U);
  const std::string metrics = httpGet(port, "/metrics").value_or("");
  EXPECT_NE(metrics.find("\ntorus_deep_check_runs_total{result=\"passed\"} " +
                         std::to_string(distinct.size()) + "\n"),
            std::string::npos)
      << metrics.substr(0, 2000);
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), 0);
}

}  // namespace
}  // namespace torus::testing
