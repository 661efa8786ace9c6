// Recovery through the agent binary on a simulated trn2: a device whose fault clears returns to
// service only after the agent has reset it and its memory self-test has passed. A corrupt memory
// BAR (the simulator's mem-corrupt) keeps it out with the problem named, until the memory works
// again; with --recover-with-self-test=false it returns as soon as the fault clears; where the
// agent may not write the BAR, the reset alone brings it back, said as such.
#include <filesystem>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/health/deep_check/device_memory.h"
#include "node-runtime/simulator/sim_fault.h"
#include "tests/integration/node_runtime/driver_served_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr int kDevice = 9;
const std::string kHealthy9 =
    "torus_device_healthy{instance_type=\"trn2.48xlarge\",neuron_device_index=\"9\",pod=\"\","
    "namespace=\"\",container=\"\","
    "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_name=\"\",dra_"
    "driver_name=\"\"}";

// The value of one series in a Prometheus exposition, if present.
std::optional<double> valueOf(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with(series + " ")) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

std::string recoveries(const std::string& result) {
  return "torus_device_recoveries_total{result=\"" + result + "\"}";
}

class DeviceRecoveryTest : public ::testing::Test {
 protected:
  // `prefix` runs the agent through another program (setpriv, to drop its capabilities).
  void start(const std::vector<std::string>& extra, const std::vector<std::string>& prefix = {}) {
    if (auto why = DriverServedTree::unusableBecause()) GTEST_SKIP() << *why;
    auto dir = TempDir::create("device-recovery");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = "trn2.48xlarge";
    auto served = DriverServedTree::start(spec, dir_->path());
    ASSERT_TRUE(served.ok()) << served.error().message;
    served_ = std::move(*served);
    std::vector<std::string> args = prefix;
    args.insert(args.end(), {binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                             "--simulate-dir=" + simDir().string(), "--device-plugin=false",
                             "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                             "--health-interval=100ms", "--recovery-retry=300ms"});
    args.insert(args.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<BackgroundProcess>(args);
    const auto log = agent_->waitForStderr("\"serving admin HTTP\"", 10s);
    ASSERT_TRUE(log.has_value()) << agent_->stderrText();
    port_ = loggedPort(*log, "\"serving HTTP\"");
    adminPort_ = loggedPort(*log, "\"serving admin HTTP\"");
  }
  void TearDown() override {
    if (!agent_) return;
    agent_->signal(SIGTERM);
    EXPECT_EQ(agent_->waitExit(10s), std::optional<int>(0));
  }
  // The agent's simulated tree, whose resets the simulated driver serves.
  fs::path simDir() const { return served_->view(); }
  std::uint64_t resets() const { return served_->resetsOf(kDevice); }
  // The device's PCI function as discovery places it (the driver's numbering, not address order).
  std::string pciFunctionOf(int device) const {
    auto found = discovery::discoverNode(discovery::DiscoveryRoots::under(simDir()), {});
    EXPECT_TRUE(found.ok());
    return found ? found->node.devices[static_cast<std::size_t>(device)].pciBdf : "";
  }
  fs::path deviceDir() const {
    return simDir() / "sys" / "devices" / "virtual" / "neuron_device" /
           ("neuron" + std::to_string(kDevice));
  }
  fs::path eccCounter() const { return deviceDir() / "stats" / "hardware" / "mem_ecc_uncorrected"; }
  std::string metrics() const {
    const auto reply = httpGet(port_, "/metrics");
    return reply && reply->starts_with("200") ? reply->substr(4) : "";
  }
  bool healthIs(double want) const { return valueOf(metrics(), kHealthy9) == want; }
  // What the device's health says let it back in, from the agent's debug report.
  std::string recoveredWith() const {
    const auto reply = httpGet(adminPort_, "/debug?device=" + std::to_string(kDevice));
    if (!reply || !reply->starts_with("200")) return "no report: " + reply.value_or("no answer");
    const auto report = nlohmann::json::parse(reply->substr(4), nullptr, false);
    const auto& health = report["devices"][0]["health"];
    return health.contains("recoveredWith") ? health["recoveredWith"].get<std::string>() : "";
  }
  void faultThenClear() {
    ASSERT_TRUE(writeFile(eccCounter(), "2\n").ok());
    ASSERT_TRUE(eventually([&] { return healthIs(0); }, 3s)) << agent_->stderrText();
    ASSERT_TRUE(writeFile(eccCounter(), "0\n").ok());  // write-to-clear
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<DriverServedTree> served_;
  std::unique_ptr<BackgroundProcess> agent_;
  int port_ = 0;
  int adminPort_ = 0;
};

TEST_F(DeviceRecoveryTest, AClearedFaultReturnsAfterAResetAndAPassingSelfTest) {
  start({});
  const std::uint64_t resetsBefore = resets();
  faultThenClear();
  ASSERT_TRUE(eventually([&] { return healthIs(1); }, 5s)) << agent_->stderrText();
  EXPECT_EQ(valueOf(metrics(), recoveries("passed")), 1);
  EXPECT_EQ(recoveredWith(), "reset,self-test");
  EXPECT_GT(resets(), resetsBefore) << "the device was reset";
  EXPECT_NE(agent_->stderrText().find("device back in service after a reset and a passing "
                                      "self-test"),
            std::string::npos);
}

TEST_F(DeviceRecoveryTest, AFailingSelfTestKeepsTheDeviceOutUntilItsMemoryWorks) {
  start({});
  const auto roots = discovery::DiscoveryRoots::under(simDir());
  auto corrupt = simulator::parseFault("mem-corrupt:9");
  ASSERT_TRUE(corrupt.ok());
  ASSERT_TRUE(simulator::applyFault(simDir(), *corrupt).ok());
  faultThenClear();
  ASSERT_TRUE(
      eventually([&] { return valueOf(metrics(), recoveries("self_test_failed")) >= 1; }, 5s))
      << agent_->stderrText();
  EXPECT_TRUE(healthIs(0)) << "a device whose self-test fails stays out of service";
  const std::string log = agent_->stderrText();
  EXPECT_NE(log.find("device recovery failed; it stays out of service"), std::string::npos);
  EXPECT_NE(log.find("self-test: device memory"), std::string::npos) << log;
  // Its memory works again (the write view is the device's memory once more): the next attempt
  // passes and the device returns.
  const auto files = health::deviceMemoryFiles(roots, pciFunctionOf(kDevice));
  fs::remove(files.writeCombining);
  fs::create_hard_link(files.uncached, files.writeCombining);
  ASSERT_TRUE(eventually([&] { return healthIs(1); }, 5s)) << agent_->stderrText();
  EXPECT_EQ(valueOf(metrics(), recoveries("passed")), 1);
}

// As the chart runs it the agent may not write the memory BAR (/sys is read-only there: EROFS).
// Here it runs as uid 0 with the chart's capabilities only (SYS_PTRACE, DAC_READ_SEARCH, SYSLOG:
// no DAC override),
// and the BAR file is not writable (EACCES): the self-test cannot run, the reset alone brings the
// device back, and the metric and the log say its memory was not tested — never a failed self-test
// that keeps a good device out for ever.
TEST_F(DeviceRecoveryTest, WithoutWriteAccessToTheMemoryTheResetAloneBringsItBackAndSaysSo) {
  start({},
        {"/usr/bin/setpriv", "--inh-caps=-all,+sys_ptrace,+syslog",
         "--ambient-caps=+sys_ptrace,+syslog", "--bounding-set=-all,+sys_ptrace,+syslog", "--"});
  const auto files =
      health::deviceMemoryFiles(discovery::DiscoveryRoots::under(simDir()), pciFunctionOf(kDevice));
  fs::permissions(files.writeCombining,
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::uint64_t resetsBefore = resets();
  faultThenClear();
  ASSERT_TRUE(eventually([&] { return healthIs(1); }, 5s)) << agent_->stderrText();
  EXPECT_EQ(valueOf(metrics(), recoveries("reset_only")), 1);
  EXPECT_EQ(recoveredWith(), "reset");
  EXPECT_EQ(valueOf(metrics(), recoveries("passed")), std::nullopt);
  EXPECT_EQ(valueOf(metrics(), recoveries("self_test_failed")), std::nullopt);
  EXPECT_GT(resets(), resetsBefore) << "the device was reset";
  const std::string log = agent_->stderrText();
  EXPECT_NE(log.find("its memory was not tested"), std::string::npos) << log;
  EXPECT_NE(log.find(files.writeCombining.filename().string()), std::string::npos) << log;
}

TEST_F(DeviceRecoveryTest, WithRecoveryOffTheDeviceReturnsWhenTheFaultClears) {
  start({"--recover-with-self-test=false"});
  auto corrupt = simulator::parseFault("mem-corrupt:9");
  ASSERT_TRUE(corrupt.ok());
  ASSERT_TRUE(simulator::applyFault(simDir(), *corrupt).ok());
  faultThenClear();
  ASSERT_TRUE(eventually([&] { return healthIs(1); }, 3s)) << agent_->stderrText();
  EXPECT_EQ(valueOf(metrics(), recoveries("passed")), std::nullopt);
  EXPECT_EQ(valueOf(metrics(), recoveries("self_test_failed")), std::nullopt);
}

}  // namespace
}  // namespace torus::testing
