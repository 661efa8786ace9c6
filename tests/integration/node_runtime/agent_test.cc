// neuron-node-agent as a process: starts on a simulated node, answers /healthz over loopback,
// rejects bad settings with a reason, and exits 0 on SIGTERM.
#include <csignal>
#include <cstdlib>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;

int portFromLog(const std::string& log) {
  return loggedPort(log, "\"serving HTTP\"");
}

TEST(NodeAgent, ServesHealthzOnASimulatedTrn2AndStopsOnSigterm) {
  // No device plugin: with a kubelet on this machine (a local cluster) it would register there.
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0"});
  const auto log = agent.waitForStderr("\"ready\"", 20s);
  ASSERT_TRUE(log.has_value()) << agent.stderrText();
  EXPECT_NE(log->find("\"discovered node\" instance_type=trn2.48xlarge devices=16 "
                      "healthy_devices=16 cores=64 lnc=2"),
            std::string::npos)
      << *log;
  const int port = portFromLog(*log);
  ASSERT_GT(port, 0) << *log;
  EXPECT_EQ(httpGet(port, "/healthz"), std::optional<std::string>("200 ok\n"));
  // Without DRA there is no registration to wait for.
  EXPECT_EQ(httpGet(port, "/readyz"), std::optional<std::string>("200 ready\n"));
  EXPECT_EQ(httpGet(port, "/nope").value_or("").substr(0, 3), "404");
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
  EXPECT_NE(agent.stderrText().find("\"stopped\""), std::string::npos);
}

// A grant denied at start is named before anything is served: the log names it and its fix,
// /readyz answers 503 with both, /metrics has the gauge; the grants it was given are not named.
TEST(NodeAgent, AGrantDeniedAtStartIsNamedWithItsFix) {
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0", "--kernel-log=/nonexistent/kmsg"});
  const auto log = agent.waitForStderr("\"ready\"", 20s);
  ASSERT_TRUE(log.has_value()) << agent.stderrText();
  EXPECT_NE(log->find("\"a grant the agent needs is denied\" grant=\"kernel log\""),
            std::string::npos)
      << *log;
  EXPECT_EQ(log->find("grant=reset"), std::string::npos) << *log;
  const int port = portFromLog(*log);
  ASSERT_GT(port, 0) << *log;
  const std::string ready = httpGet(port, "/readyz").value_or("");
  EXPECT_EQ(ready.substr(0, 3), "503") << ready;
  EXPECT_NE(ready.find("denied: kernel log: cannot read the kernel log /nonexistent/kmsg"),
            std::string::npos)
      << ready;
  EXPECT_NE(ready.find("fix: the capability SYSLOG"), std::string::npos) << ready;
  EXPECT_EQ(ready.find("reset:"), std::string::npos) << ready;
  const std::string metrics = httpGet(port, "/metrics").value_or("");
  EXPECT_NE(metrics.find("torus_agent_grant_denied{grant=\"kernel log\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("torus_agent_grant_denied{grant=\"reset\"} 0"), std::string::npos);
  EXPECT_NE(metrics.find("torus_agent_grant_denied{grant=\"process scan\"} 0"), std::string::npos);
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
}

TEST(NodeAgent, StopsCleanlyWhenSignalledDuringStartup) {
  // No device plugin: with a kubelet on this machine (a local cluster) it would register there.
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0"});
  ASSERT_TRUE(agent.waitForStderr("starting neuron-node-agent", 10s).has_value());
  agent.signal(SIGINT);
  EXPECT_EQ(agent.waitExit(20s), std::optional<int>(0)) << agent.stderrText();
}

TEST(NodeAgent, ConfigFileSetsWhatFlagsDoNotAndUnknownKeysFail) {
  auto dir = TempDir::create("agent-test");
  ASSERT_TRUE(dir.ok());
  const std::string config = (dir->path() / "agent.yaml").string();
  ASSERT_TRUE(writeFile(config,
                        "version: v1\nsimulate: inf2.48xlarge\nlogLevel: debug\n"
                        "metricsAddr: 127.0.0.1:0\nadminAddr: 127.0.0.1:0\ndevicePlugin: false\n")
                  .ok());
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--config", config});
  const auto log = agent.waitForStderr("\"ready\"", 20s);
  ASSERT_TRUE(log.has_value()) << agent.stderrText();
  EXPECT_NE(log->find("name=simulate value=inf2.48xlarge source=\"config file\""),
            std::string::npos)
      << *log;
  EXPECT_NE(log->find("DEBUG discovery \"device\" device=11"), std::string::npos);
  agent.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));

  ASSERT_TRUE(writeFile(config, "version: v1\nsimualte: inf2.48xlarge\n").ok());
  const ProcessResult bad = runProcess({binaryPath("neuron-node-agent"), "--config", config});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("unknown key \"simualte\""), std::string::npos) << bad.err;
}

TEST(NodeAgent, StartupFailuresExitNonZeroWithTheReason) {
  const ProcessResult noDriver =
      runProcess({binaryPath("neuron-node-agent"), "--sysfs-root=/nonexistent/sys",
                  "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0"});
  EXPECT_EQ(noDriver.exitCode, 1);
  EXPECT_NE(noDriver.err.find("is the Neuron driver loaded?"), std::string::npos) << noDriver.err;
  const ProcessResult badAddress =
      runProcess({binaryPath("neuron-node-agent"), "--simulate=inf2.xlarge",
                  "--metrics-addr=127.0.0.1:99999"});
  EXPECT_EQ(badAddress.exitCode, 1);
  EXPECT_NE(badAddress.err.find("listen address \\\"127.0.0.1:99999\\\": port: expected integer"),
            std::string::npos)
      << badAddress.err;
}

TEST(NodeAgent, RefusesAHealthIntervalItCannotKeep) {
  const ProcessResult tooFast = runProcess(
      {binaryPath("neuron-node-agent"), "--simulate=inf2.xlarge", "--health-interval=10ms",
       "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0"});
  EXPECT_EQ(tooFast.exitCode, 1);
  EXPECT_NE(tooFast.err.find("--health-interval must be at least 50ms, got 10ms"),
            std::string::npos)
      << tooFast.err;
  EXPECT_EQ(tooFast.err.find("wrote simulated driver tree"), std::string::npos)
      << "refused before doing any work";
}

TEST(NodeAgent, ConfigReferenceMatchesDocs) {
  const ProcessResult reference =
      runProcess({binaryPath("neuron-node-agent"), "--print-config-reference"});
  ASSERT_EQ(reference.exitCode, 0);
  auto docs = readSmallFile(std::string(TORUS_SOURCE_DIR) + "/docs/config.md", 1 << 20);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  EXPECT_NE(docs->find(reference.out), std::string::npos)
      << "docs/config.md is out of date; regenerate the table with "
         "build/bin/neuron-node-agent --print-config-reference";
}

}  // namespace
}  // namespace torus::testing
