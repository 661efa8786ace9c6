// NeuronSliceSource, the Neuron half of slice publishing: the node's pool built for what the API
// keeps (counters, taints), an unhealthy chip's taint dated from when it was first seen so, and
// the publisher told of every change of the node or of the UltraServer reservation.
#include "dra-driver/neuron_slice_source.h"

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/dra_names.h"
#include "common/contracts/neuron_names.h"
#include "common/topology/node.h"
#include "tests/integration/dra/fake_node_view.h"

namespace torus::dra {
namespace {

using nlohmann::json;

using FakeNode = testing::FakeNodeView;

// Every device of the pool, by name, and whether any slice shares counters.
struct Pool {
  std::map<std::string, json> devices;
  bool sharedCounters = false;
};

Pool poolOf(const std::vector<json>& slices) {
  Pool pool;
  for (const json& slice : slices) {
    const json& spec = slice.at("spec");
    pool.sharedCounters = pool.sharedCounters || spec.contains("sharedCounters");
    for (const json& device : spec.value("devices", json::array()))
      pool.devices[device.at("name").get<std::string>()] = device;
  }
  return pool;
}

TEST(NeuronSliceSource, BuildsThePoolForWhatTheApiKeeps) {
  FakeNode node;
  NeuronSliceSource source("node-a", node, SliceOptions{});
  const Pool full = poolOf(source.slices(KeptFields{}, {}));
  EXPECT_TRUE(full.sharedCounters);
  EXPECT_TRUE(full.devices.contains("neuroncore5")) << "core partitions where counters are kept";
  EXPECT_TRUE(full.devices.at("neurondevice1").contains("consumesCounters"));

  const Pool noCounters = poolOf(source.slices(KeptFields{.counters = false}, {}));
  EXPECT_FALSE(noCounters.sharedCounters);
  EXPECT_FALSE(noCounters.devices.contains("neuroncore5")) << "no partitions without counters";
  EXPECT_EQ(noCounters.devices.size(), 16U);
  EXPECT_FALSE(noCounters.devices.at("neurondevice1").contains("consumesCounters"));
}

// Partitions cost every claim the scheduler filters on a node, so an operator can keep them to
// the nodes that run core claims: the Node's label overrides the configured setting both ways.
TEST(NeuronSliceSource, TheNodesLabelDecidesWhetherItPublishesCorePartitions) {
  FakeNode node;
  NeuronSliceSource byDefault("node-a", node, SliceOptions{});
  const std::string label = contracts::kCoreDevicesLabel;
  const Pool off = poolOf(byDefault.slices(KeptFields{}, {{label, "false"}}));
  EXPECT_FALSE(off.devices.contains("neuroncore5"));
  EXPECT_EQ(off.devices.size(), 16U);
  EXPECT_FALSE(off.sharedCounters) << "a trn2 without partitions needs no counters";
  EXPECT_TRUE(
      poolOf(byDefault.slices(KeptFields{}, {{label, "true"}})).devices.contains("neuroncore5"));
  // A value that is neither keeps the configured setting (and is logged once).
  EXPECT_TRUE(
      poolOf(byDefault.slices(KeptFields{}, {{label, "no"}})).devices.contains("neuroncore5"));

  SliceOptions withoutCores;
  withoutCores.coreDevices = false;
  NeuronSliceSource configuredOff("node-a", node, withoutCores);
  EXPECT_FALSE(poolOf(configuredOff.slices(KeptFields{}, {})).devices.contains("neuroncore5"));
  EXPECT_TRUE(poolOf(configuredOff.slices(KeptFields{}, {{label, "true"}}))
                  .devices.contains("neuroncore5"));
  // Where the API keeps no counters the label cannot bring partitions back.
  EXPECT_FALSE(poolOf(configuredOff.slices(KeptFields{.counters = false}, {{label, "true"}}))
                   .devices.contains("neuroncore5"));
}

TEST(NeuronSliceSource, AnUnhealthyChipIsTaintedSinceFirstSeenOrLeftOutWithoutTaints) {
  FakeNode node;
  NeuronSliceSource source("node-a", node, SliceOptions{});
  node.setHealth(
      3, topology::DeviceHealth::unhealthy(topology::HealthDimension::kEccUncorrected, "mem",
                                           "stats/hardware/mem_ecc_uncorrected is 1"));
  const json taint =
      poolOf(source.slices(KeptFields{}, {})).devices.at("neurondevice3")["taints"][0];
  EXPECT_EQ(taint["key"], "neuron.aws.com/ecc-uncorrected");
  EXPECT_EQ(taint["effect"], "NoSchedule");
  ASSERT_TRUE(taint.contains("timeAdded"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // RFC 3339 has whole seconds
  const json later =
      poolOf(source.slices(KeptFields{}, {})).devices.at("neurondevice3")["taints"][0];
  EXPECT_EQ(later["timeAdded"], taint["timeAdded"]) << "dated from when it was first seen";

  const Pool untainted = poolOf(source.slices(KeptFields{.taints = false}, {}));
  EXPECT_FALSE(untainted.devices.contains("neurondevice3")) << "left out where taints are dropped";
  EXPECT_TRUE(untainted.devices.contains("neurondevice2"));

  // An API that refuses the effect None: an unmonitored chip is published without that taint.
  topology::DeviceHealth unknown;
  unknown.unmonitored = {"kernel log: gone"};
  node.setHealth(2, unknown);
  EXPECT_EQ(poolOf(source.slices(KeptFields{}, {})).devices.at("neurondevice2")["taints"].size(),
            1u);
  EXPECT_FALSE(poolOf(source.slices(KeptFields{.noneEffect = false}, {}))
                   .devices.at("neurondevice2")
                   .contains("taints"));
}

TEST(NeuronSliceSource, TellsOfEveryChangeOfTheNodeOrTheReservation) {
  FakeNode node;
  NeuronSliceSource source("node-a", node, SliceOptions{});
  std::atomic<int> told = 0;
  const auto subscription = source.onChange([&] { ++told; });
  node.setHealth(
      5, topology::DeviceHealth::unhealthy(topology::HealthDimension::kDeviceLost,
                                           "DeviceNodeMissing", "the device node is missing"));
  EXPECT_EQ(told.load(), 1);
  source.setReservation("e2e/allreduce-us", false);
  EXPECT_EQ(told.load(), 2);
  source.setReservation("e2e/allreduce-us", true);
  EXPECT_EQ(told.load(), 3) << "Bound now";
  source.setReservation("e2e/allreduce-us", true);
  EXPECT_EQ(told.load(), 3) << "the same reservation again is no change";
  for (const auto& [name, device] : poolOf(source.slices(KeptFields{}, {})).devices) {
    EXPECT_EQ(device["attributes"][std::string(contracts::kWorkloadIdAttribute)],
              json({{"string", "e2e/allreduce-us"}}))
        << name;
  }
}

// A restarted agent on a reserved node must not publish the node as free before it has read the
// reservations: the source is not ready until it knows, and says so when it does.
TEST(NeuronSliceSource, AwaitingTheReservationItIsNotReadyUntilItIsKnown) {
  FakeNode node;
  NeuronSliceSource source("node-a", node, SliceOptions{});
  EXPECT_TRUE(source.ready());
  source.awaitReservation();
  EXPECT_FALSE(source.ready());
  std::atomic<int> told = 0;
  const auto subscription = source.onChange([&] { ++told; });
  source.setReservation("", false);  // listed: no reservation here, which is news too
  EXPECT_TRUE(source.ready());
  EXPECT_EQ(told.load(), 1);
}

}  // namespace
}  // namespace torus::dra
