// The agent's /metrics over HTTP on loopback: the exposition passes `promtool check metrics`,
// a contract pins every family name and its label names (dashboards depend on them), and a
// raised ECC counter shows up as a counter, an unhealthy device and a health transition.
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "tests/integration/node_runtime/driver_served_tree.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// family (sample name without _bucket/_sum/_count) -> label names; and the value of each line.
struct Exposition {
  std::map<std::string, std::set<std::string>> labelNames;
  std::map<std::string, double> values;  // the whole "name{labels}" -> value
};

Exposition parse(const std::string& text) {
  Exposition out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    out.values[series] = std::stod(line.substr(space + 1));
    const std::size_t brace = series.find('{');
    const std::string name = series.substr(0, brace);
    auto& labels = out.labelNames[name];
    if (brace == std::string::npos) continue;
    std::size_t at = brace + 1;
    while (at < series.size() && series[at] != '}') {
      const std::size_t equals = series.find('=', at);
      labels.insert(series.substr(at, equals - at));
      at = series.find('"', series.find('"', equals) + 1) + 1;  // past the closing quote
      if (at < series.size() && series[at] == ',') ++at;
    }
  }
  return out;
}

std::string metricsOf(int port) {
  const auto reply = httpGet(port, "/metrics");
  if (!reply || reply->substr(0, 3) != "200") return "";
  return reply->substr(4);
}

class AgentMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A device back from a fault is reset before it returns: the simulated driver serves resets.
    if (auto why = DriverServedTree::unusableBecause()) GTEST_SKIP() << *why;
    auto dir = TempDir::create("agent-metrics");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = "trn2.48xlarge";
    auto served = DriverServedTree::start(spec, dir_->path() / "served");
    ASSERT_TRUE(served.ok()) << served.error().message;
    served_ = std::move(*served);
    agent_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                                 "--simulate-dir=" + simDir().string(), "--device-plugin=false",
                                 "--metrics-addr=127.0.0.1:0", "--admin-addr=127.0.0.1:0",
                                 "--health-interval=100ms", "--kernel-error-hold=1s"});
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
  fs::path simDir() const { return served_->view(); }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<DriverServedTree> served_;
  std::unique_ptr<BackgroundProcess> agent_;
  int port_ = 0;
  int adminPort_ = 0;
};

// The DRA labels of a series no claim holds (every per-core and per-device series has them).
const std::string kNoClaim =
    "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\",dra_pool_name=\"\","
    "dra_driver_name=\"\"";

TEST_F(AgentMetricsTest, NamesAndLabelsAreAContract) {
  // One deep check first, so its families have samples to pin.
  ASSERT_EQ(httpPost(adminPort_, "/deep-check", "").value_or("").substr(0, 3), "200");
  const Exposition metrics = parse(metricsOf(port_));
  // Per-device and per-core series name the holder (empty when free).
  const auto withHolder = [](std::set<std::string> labels) {
    labels.insert({"instance_type", "neuron_device_index", "pod", "namespace", "container",
                   "dra_claim_name", "dra_claim_namespace", "dra_device_name", "dra_pool_name",
                   "dra_driver_name"});
    return labels;
  };
  const std::map<std::string, std::set<std::string>> expected = {
      {"instance_info", {"instance_type"}},
      {"neuron_hardware_info",
       {"instance_type", "neuron_device_type", "neuron_device_count", "neuroncore_per_device_count",
        "logical_neuroncore_config"}},
      {"hardware_ecc_events_total", withHolder({"event_type"})},
      {"neuroncore_memory_usage_constants", withHolder({"neuroncore", "memory_location"})},
      {"neuroncore_memory_usage_model_code", withHolder({"neuroncore", "memory_location"})},
      {"neuroncore_memory_usage_model_shared_scratchpad",
       withHolder({"neuroncore", "memory_location"})},
      {"neuroncore_memory_usage_runtime_memory", withHolder({"neuroncore", "memory_location"})},
      {"neuroncore_memory_usage_tensors", withHolder({"neuroncore", "memory_location"})},
      {"neuron_runtime_memory_used_bytes", withHolder({"memory_location"})},
      {"execution_status_total", withHolder({"neuroncore", "status_type"})},
      {"execution_errors_total", withHolder({"neuroncore", "error_type"})},
      {"torus_device_healthy", withHolder({})},
      {"torus_sysfs_read_errors", {"instance_type"}},
      {"torus_build_info", {"version"}},
      {"torus_deep_check_runs_total", {"result"}},
      {"torus_deep_check_last_run_timestamp_seconds", {}},
      {"torus_deep_check_last_success_timestamp_seconds", {}},
      {"torus_deep_check_duration_seconds", {}},
      {"torus_deep_check_failures", {}},
      {"torus_deep_check_device_passed", {"neuron_device_index"}},
      {"torus_neuronlink_up", {"neuron_device_index", "peer_device_index"}},
      {"torus_deep_check_host_allreduce_seconds", {}},
      {"torus_deep_check_checked", {"part"}},
  };
  for (const auto& [family, labels] : expected) {
    ASSERT_EQ(metrics.labelNames.count(family), 1U) << family << " missing";
    EXPECT_EQ(metrics.labelNames.at(family), labels) << family;
  }
  // 64 logical cores at LNC 2: one series per core, ids as in NEURON_RT_VISIBLE_CORES.
  EXPECT_EQ(
      metrics.values.count("neuroncore_memory_usage_tensors{instance_type=\"trn2.48xlarge\","
                           "neuron_device_index=\"15\",neuroncore=\"63\",pod=\"\",namespace=\"\","
                           "container=\"\"," +
                           kNoClaim + ",memory_location=\"device\"}"),
      1U);
  EXPECT_EQ(metrics.values.at("torus_sysfs_read_errors{instance_type=\"trn2.48xlarge\"}"), 0);
}

TEST_F(AgentMetricsTest, PassesPromtool) {
  // With a deep check's samples in it, as an operator's scrape would have.
  ASSERT_EQ(httpPost(adminPort_, "/deep-check", "").value_or("").substr(0, 3), "200");
  const std::string text = metricsOf(port_);
  ASSERT_FALSE(text.empty());
  const std::string file = (dir_->path() / "metrics.txt").string();
  ASSERT_TRUE(writeFile(file, text).ok());
  const ProcessResult checked =
      runProcess({"/bin/sh", "-c", std::string(TORUS_PROMTOOL) + " check metrics < " + file});
  EXPECT_EQ(checked.exitCode, 0) << checked.out << checked.err;
}

TEST_F(AgentMetricsTest, EccRaisedShowsAsCounterHealthAndTransition) {
  const fs::path ecc = simDir() / "sys" / "devices" / "virtual" / "neuron_device" / "neuron9" /
                       "stats" / "hardware" / "mem_ecc_uncorrected";
  ASSERT_TRUE(writeFile(ecc, "3\n").ok());
  const std::string device9 =
      "{instance_type=\"trn2.48xlarge\",neuron_device_index=\"9\",pod=\"\",namespace=\"\","
      "container=\"\"," +
      kNoClaim + "}";
  const std::string eccSeries =
      "hardware_ecc_events_total{instance_type=\"trn2.48xlarge\",event_type=\"mem_ecc_"
      "uncorrected\",neuron_device_index=\"9\",pod=\"\",namespace=\"\",container=\"\"," +
      kNoClaim + "}";
  const std::string toUnhealthy =
      "torus_device_health_transitions_total{neuron_device_index=\"9\",to=\"unhealthy\"}";
  ASSERT_TRUE(eventually(
      [&] {
        const Exposition metrics = parse(metricsOf(port_));
        return metrics.values.count("torus_device_healthy" + device9) &&
               metrics.values.at("torus_device_healthy" + device9) == 0 &&
               metrics.values.count(toUnhealthy) && metrics.values.at(toUnhealthy) == 1;
      },
      1500ms));
  EXPECT_EQ(parse(metricsOf(port_)).values.at(eccSeries), 3);
  ASSERT_TRUE(writeFile(ecc, "0\n").ok());  // write-to-clear
  EXPECT_TRUE(eventually(
      [&] {
        const Exposition metrics = parse(metricsOf(port_));
        return metrics.values.at("torus_device_healthy" + device9) == 1 &&
               metrics.values.count(
                   "torus_device_health_transitions_total{neuron_device_index=\"9\",to="
                   "\"healthy\"}");
      },
      1500ms));
}

// A NEURON_HW_ERR line is a claim any holder of a device node can write: it is counted and the
// chip stays in service. Once the chip's firmware ECC counter rises within the hold, the claim is
// proven and the chip is out for the hold time as a hardware error. Forged shapes are not counted.
TEST_F(AgentMetricsTest, KernelLogClaimsTakeTheDeviceOutOnlyOnceTheFirmwareConfirmsThem) {
  const fs::path kmsg = simDir() / "dev" / "kmsg";
  const fs::path neuron4 = simDir() / "sys" / "devices" / "virtual" / "neuron_device" / "neuron4";
  auto serial = readSmallFile(neuron4 / "info" / "serial_number", 64);
  ASSERT_TRUE(serial.ok()) << serial.error().message;
  const std::string serialNumber = serial->substr(0, serial->find('\n'));
  // Appended, as the kernel's log only grows (it holds the driver's load lines already).
  std::ofstream(kmsg, std::ios::app)
      << "3,88,1000,-;NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd-id=4 serial-num=" << serialNumber
      << "\n";
  const std::string device4 =
      "{instance_type=\"trn2.48xlarge\",neuron_device_index=\"4\",pod=\"\",namespace=\"\","
      "container=\"\"," +
      kNoClaim + "}";
  const auto counted = [](const char* type) {
    return std::string("torus_kernel_hardware_errors_total{type=\"") + type +
           "\",neuron_device_index=\"4\"}";
  };
  const std::string actedOn =
      "torus_kernel_hardware_errors_acted_on_total{type=\"HBM_UNCORRECTABLE_ERROR\","
      "neuron_device_index=\"4\",proof=\"firmware_ecc\"}";
  ASSERT_TRUE(eventually(
      [&] {
        const Exposition metrics = parse(metricsOf(port_));
        return metrics.values.count(counted("HBM_UNCORRECTABLE_ERROR")) &&
               metrics.values.at(counted("HBM_UNCORRECTABLE_ERROR")) == 1;
      },
      1s))
      << agent_->stderrText();
  // The claim was handled when it was counted (the agent acts in the same call when it acts);
  // 5 health intervals more leave room for a health pass to publish anything it would have.
  std::this_thread::sleep_for(500ms);
  Exposition metrics = parse(metricsOf(port_));
  EXPECT_EQ(metrics.values.at("torus_device_healthy" + device4), 1) << "a claim alone";
  EXPECT_EQ(metrics.values.count(actedOn), 0U);

  // The firmware's counter rises: the claim is proven.
  const fs::path sram = neuron4 / "stats" / "hardware" / "sram_ecc_uncorrected";
  ASSERT_TRUE(writeFile(sram, "1\n").ok());
  ASSERT_TRUE(eventually(
      [&] {
        const Exposition now = parse(metricsOf(port_));
        return now.values.count(actedOn) && now.values.at(actedOn) == 1 &&
               now.values.at("torus_device_healthy" + device4) == 0;
      },
      2s))
      << agent_->stderrText();
  EXPECT_TRUE(eventually(
      [&] {
        return agent_->stderrText().find("kernel log NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR") !=
               std::string::npos;
      },
      1s))
      << "out of service as a hardware error, not only as ECC";
  ASSERT_TRUE(writeFile(sram, "0\n").ok());  // write-to-clear
  // No further reports: back in service once the hold (1 s here) has passed.
  EXPECT_TRUE(eventually(
      [&] { return parse(metricsOf(port_)).values.at("torus_device_healthy" + device4) == 1; },
      4s));

  // A segfault line naming the chip, and the marker mid-line: not claims. Lines are read in
  // order, so once the DMA_ERROR claim after them is counted they have been seen.
  std::ofstream(kmsg, std::ios::app)
      << "6,89,2000,-;a.out[42]: segfault at 0 ip 0000000000401136 sp 00007ffc00000000 error 4 "
         "in NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR serial-num="
      << serialNumber << "[401000+1000] likely on CPU 1 (core 1, socket 0)\n"
      << "6,90,2001,-;torus: NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR serial-num=" << serialNumber
      << "\n"
      << "3,91,2002,-;NEURON_HW_ERR=DMA_ERROR serial-num=" << serialNumber << "\n";
  ASSERT_TRUE(
      eventually([&] { return parse(metricsOf(port_)).values.count(counted("DMA_ERROR")); }, 2s))
      << agent_->stderrText();
  metrics = parse(metricsOf(port_));
  EXPECT_EQ(metrics.values.count(counted("SRAM_UNCORRECTABLE_ERROR")), 0U);
  EXPECT_EQ(metrics.values.count(counted("NC_UNCORRECTABLE_ERROR")), 0U);
  EXPECT_EQ(metrics.values.at("torus_device_healthy" + device4), 1);
}

// Regression, for /metrics: a counter file whose read never returns (a FIFO stands in for a hung
// driver attribute) costs one scrape its deadline, then scrapes answer at once without the
// driver's counters and say why; once the read returns they are back.
TEST_F(AgentMetricsTest, AHungCounterReadLeavesScrapesAnswered) {
  const fs::path counter = simDir() / "sys" / "devices" / "virtual" / "neuron_device" / "neuron5" /
                           "neuron_core0" / "stats" / "status" / "success" / "total";
  const fs::path fifo = simDir() / "hang.fifo";  // on the same mount: hard-linked below
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::remove(counter);
  ASSERT_EQ(::link(fifo.c_str(), counter.c_str()), 0);  // reads of the counter now block

  const auto timed = [&] {
    const auto started = std::chrono::steady_clock::now();
    const std::string text = metricsOf(port_);
    return std::make_pair(text, std::chrono::steady_clock::now() - started);
  };
  const auto [first, firstTook] = timed();
  EXPECT_LT(firstTook, 4s) << "one deadline (2 s), not for ever";
  const std::string readErrors = "torus_sysfs_read_errors{instance_type=\"trn2.48xlarge\"} 1";
  EXPECT_NE(first.find(readErrors), std::string::npos) << first;
  EXPECT_EQ(first.find("\nexecution_status_total{"), std::string::npos) << "no half-read counters";
  EXPECT_NE(first.find("\ntorus_device_healthy{"), std::string::npos) << "the rest is served";
  const auto [second, secondTook] = timed();
  EXPECT_LT(secondTook, 1s) << "a stuck read is not waited on again";
  EXPECT_NE(second.find(readErrors), std::string::npos);
  EXPECT_EQ(httpGet(port_, "/healthz").value_or("").substr(0, 3), "200");
  EXPECT_NE(agent_->stderrText().find("a read of them hangs"), std::string::npos);

  // The read returns (a writer opens the FIFO and goes); the counter is a file again.
  fs::remove(counter);
  ASSERT_TRUE(writeFile(counter, "7\n").ok());
  {
    const UniqueFd writer(::open(fifo.c_str(), O_WRONLY));  // the reader's open returns...
    ASSERT_TRUE(writer.valid());
  }  // ...and, the writer gone, its read ends

  EXPECT_TRUE(eventually(
      [&] {
        const std::string text = metricsOf(port_);
        return text.find("\nexecution_status_total{") != std::string::npos &&
               text.find("torus_sysfs_read_errors{instance_type=\"trn2.48xlarge\"} 0") !=
                   std::string::npos;
      },
      5s));
}

}  // namespace
}  // namespace torus::testing
