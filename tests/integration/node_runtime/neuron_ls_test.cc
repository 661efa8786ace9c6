// neuron-ls as a user runs it: the real binary on a simulated node, output checked as JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

nlohmann::json runJson(std::vector<std::string> flags) {
  std::vector<std::string> args{binaryPath("neuron-ls"), "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  const ProcessResult result = runProcess(args);
  EXPECT_EQ(result.exitCode, 0) << result.err;
  return nlohmann::json::parse(result.out);
}

TEST(NeuronLs, Trn2JsonHasAwsKeysAndCatalogFigures) {
  const nlohmann::json devices = runJson({"--simulate=trn2.48xlarge"});
  ASSERT_EQ(devices.size(), 16U);
  int cores = 0;
  for (const auto& device : devices) {
    EXPECT_EQ(device["logical_neuroncore_config"], 2);
    EXPECT_EQ(device["memory_size"], 103079215104ULL);
    cores += device["nc_count"].get<int>();
    for (const char* key : {"neuron_device", "bdf", "connected_to", "nc_count", "memory_size",
                            "neuroncore_ids", "numa_node"}) {
      EXPECT_TRUE(device.contains(key)) << key;
    }
  }
  EXPECT_EQ(cores, 64);
  EXPECT_EQ(devices[0]["connected_to"], nlohmann::json({12, 1, 3, 4}));
  // AWS's value formats (its published neuron-ls -j of a trn2n.48xlarge, whose neuron0 is at
  // cc:00.0 on NUMA node 1): bdf without the domain, numa_node and cpu_affinity as strings; the
  // full address under a key of ours.
  EXPECT_EQ(devices[0]["bdf"], "cc:00.0");
  EXPECT_EQ(devices[0]["numa_node"], "1");
  EXPECT_EQ(devices[0]["cpu_affinity"], "48-95,144-191");
  EXPECT_EQ(devices[0]["pci_bus_id"], "0000:cc:00.0");
  EXPECT_EQ(devices[5]["bdf"], "58:00.0");
  EXPECT_EQ(devices[5]["numa_node"], "0");
  EXPECT_EQ(devices[15]["neuroncore_ids"], nlohmann::json({60, 61, 62, 63}));
}

// The driver says which PCI function each device is only in lines it logs while loading, which the
// kernel's ring drops in time. With --state-dir the map of this boot is kept, and a later run
// whose kernel log no longer holds the lines still places every device; a record of another boot
// is not used.
TEST(NeuronLs, APciMapKeptInThisBootOutlivesTheDriversLoadLines) {
  auto dir = TempDir::create("neuron-ls-state");
  ASSERT_TRUE(dir.ok());
  const std::string sim = "--simulate-dir=" + (dir->path() / "sim").string();
  const std::string state = "--state-dir=" + (dir->path() / "state").string();
  const auto placed = [](const nlohmann::json& devices) {
    return devices.empty() ? std::string("none") : devices[0].value("pci_bus_id", std::string());
  };
  EXPECT_EQ(placed(runJson({"--simulate=trn2.48xlarge", sim, state})), "0000:cc:00.0");
  const auto record = readSmallFile(dir->path() / "state" / "pci-map");
  ASSERT_TRUE(record.ok());
  EXPECT_NE(record->find("neuron0 0000:cc:00.0\n"), std::string::npos) << *record;

  // The ring has dropped the load lines.
  ASSERT_TRUE(writeFile(dir->path() / "sim" / "dev" / "kmsg", "").ok());
  EXPECT_EQ(placed(runJson({"--simulate=trn2.48xlarge", sim})), "") << "nothing kept: not placed";
  EXPECT_EQ(placed(runJson({"--simulate=trn2.48xlarge", sim, state})), "0000:cc:00.0");

  // A record of another boot (the machine restarted; the driver numbered its devices anew).
  std::string otherBoot = *record;
  otherBoot.replace(otherBoot.find("boot_id ") + 8, 4, "ffff");
  ASSERT_TRUE(writeFile(dir->path() / "state" / "pci-map", otherBoot).ok());
  EXPECT_EQ(placed(runJson({"--simulate=trn2.48xlarge", sim, state})), "");
}

TEST(NeuronLs, LncOneDoublesTheCores) {
  const nlohmann::json devices = runJson({"--simulate=trn2.48xlarge", "--lnc", "1"});
  int cores = 0;
  for (const auto& device : devices)
    cores += device["nc_count"].get<int>();
  EXPECT_EQ(cores, 128);
  EXPECT_EQ(devices[0]["logical_neuroncore_config"], 1);
}

TEST(NeuronLs, Inf2ChainEndHasOneNeighbour) {
  const nlohmann::json devices = runJson({"--simulate=inf2.24xlarge"});
  ASSERT_EQ(devices.size(), 6U);
  EXPECT_EQ(devices[0]["connected_to"], nlohmann::json({1}));
}

TEST(NeuronLs, FaultsShowInTableAndJson) {
  const nlohmann::json devices = runJson({"--simulate=trn1.32xlarge", "--simulate-fault=ecc:2"});
  EXPECT_EQ(devices[2]["healthy"], false);
  EXPECT_EQ(devices[2]["health_reason"],
            "stats/hardware/mem_ecc_uncorrected is 1 (uncorrected ECC errors)");
  EXPECT_EQ(devices[2]["health_state"], "unhealthy");
  EXPECT_EQ(devices[3]["health_state"], "healthy");
  // trn1.32xlarge: four chips per PCIe root (AWS's published lspci); routing ids 0-3 on the
  // first root are devices 0, 4, 1 and 5 by the driver's trn1 table.
  EXPECT_EQ(devices[0]["pcie_root"], devices[5]["pcie_root"]);
  EXPECT_EQ(devices[1]["pcie_root"], devices[4]["pcie_root"]);
  EXPECT_NE(devices[1]["pcie_root"], devices[2]["pcie_root"]);
  const ProcessResult table = runProcess(
      {binaryPath("neuron-ls"), "--simulate=trn1.32xlarge", "--simulate-fault=link-cut:0-1"});
  EXPECT_EQ(table.exitCode, 0);
  EXPECT_NE(table.out.find("instance-type: trn1.32xlarge"), std::string::npos);
  EXPECT_NE(table.out.find("warning: neuron0: connected_devices is \"12, 3, 4\""),
            std::string::npos)
      << table.out;
}

TEST(NeuronLs, TopologyDrawsTheTorusAndShowsACutLink) {
  const ProcessResult result = runProcess({binaryPath("neuron-ls"), "--simulate=trn2.48xlarge",
                                           "--topology", "--simulate-fault=link-cut:5-6"});
  ASSERT_EQ(result.exitCode, 0) << result.err;
  EXPECT_NE(result.out.find("[ 0]---[ 1]---[ 2]---[ 3]"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[ 4]---[ 5]   [ 6]---[ 7]"), std::string::npos) << result.out;
}

TEST(NeuronLs, ReadsARealRootAndReportsAMissingDriver) {
  const ProcessResult result =
      runProcess({binaryPath("neuron-ls"), "--sysfs-root=/nonexistent/sys"});
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_NE(result.err.find("/nonexistent/sys/class/neuron_device"), std::string::npos)
      << result.err;
}

TEST(NeuronLs, UsageErrorsExitTwoWithAReason) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--bogus"}, "unknown flag --bogus"},
      {{"--simulate=trn9.big"}, "unknown instance type \"trn9.big\""},
      {{"--simulate=inf2.48xlarge", "--lnc=2"}, "LNC 2 is not supported on inf2.48xlarge"},
      {{"--simulate-fault=ecc:1"}, "--simulate-fault needs --simulate"},
      {{"--lnc=7"}, "flag --lnc: expected integer in [1, 2]"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args{binaryPath("neuron-ls")};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult result = runProcess(args);
    EXPECT_EQ(result.exitCode, 2) << flags[0] << ": " << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
  }
  const ProcessResult help = runProcess({binaryPath("neuron-ls"), "--help"});
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.out.find("--simulate=TYPE"), std::string::npos);
}

}  // namespace
}  // namespace torus::testing
