#include "dra-driver/slice_builder.h"

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "common/contracts/dra_names.h"
#include "common/topology/neuronlink_graph.h"
#include "dra-driver/kubelet/slice_publisher.h"

namespace torus::dra {
namespace {

using nlohmann::json;

SliceInputs inputsFor(const std::string& type, int lnc = 0) {
  auto node = topology::catalogNode(type, lnc);
  EXPECT_TRUE(node.ok()) << type;
  SliceInputs inputs;
  inputs.nodeName = "node-a";
  inputs.node = *node;
  return inputs;
}

std::map<std::string, json> devicesByName(const std::vector<json>& slices) {
  std::map<std::string, json> devices;
  for (const json& slice : slices) {
    for (const json& device : slice["spec"].value("devices", json::array())) {
      EXPECT_FALSE(devices.contains(device["name"])) << device["name"];
      devices[device["name"].get<std::string>()] = device;
    }
  }
  return devices;
}

std::string groupId(const json& device, int size) {
  const std::string key = "resource.aws.com/devicegroup" + std::to_string(size) + "_id";
  return device["attributes"].contains(key) ? device["attributes"][key]["string"].get<std::string>()
                                            : "";
}

TEST(SliceBuilder, Trn2ChipsCarryAwsAttributesCapacityAndCounters) {
  const std::vector<json> slices = buildSlices(inputsFor("trn2.48xlarge"), 7);
  // 16 chips + 64 cores (LNC 2) in slices of at most 64, plus the counter slice.
  ASSERT_EQ(slices.size(), 3u);
  for (const json& slice : slices) {
    EXPECT_EQ(slice["spec"]["driver"], "neuron.aws.com");
    EXPECT_EQ(slice["spec"]["nodeName"], "node-a");
    EXPECT_EQ(slice["spec"]["pool"]["name"], "node-a");
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 7);
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 3);
    // The API allows counters or devices in one slice, never both.
    EXPECT_NE(slice["spec"].contains("sharedCounters"), slice["spec"].contains("devices"));
  }
  const json& counters = slices[0]["spec"]["sharedCounters"][0];
  EXPECT_EQ(counters["name"], "neuron-chips");
  EXPECT_EQ(counters["counters"].size(), 16u);
  EXPECT_EQ(counters["counters"]["device5"]["value"], "4");

  const auto devices = devicesByName(slices);
  ASSERT_EQ(devices.size(), 80u);
  const json& chip = devices.at("neurondevice5");
  const json& attributes = chip["attributes"];
  EXPECT_EQ(attributes["deviceId"]["int"], 5);
  EXPECT_EQ(attributes["resourceType"]["string"], "neuron_device");
  EXPECT_EQ(attributes["instanceType"]["string"], "trn2.48xlarge");
  EXPECT_EQ(attributes["topology_x"]["int"], 1);  // row, as AWS documents it
  EXPECT_EQ(attributes["topology_y"]["int"], 1);
  EXPECT_EQ(attributes["topology4_id"]["int"], 1);
  EXPECT_EQ(attributes["topology8_id"]["int"], 0);
  EXPECT_EQ(attributes["logicalNeuronCoreConfig"]["int"], 2);
  EXPECT_TRUE(attributes["draDriverVersion"].contains("version"));
  EXPECT_EQ(chip["capacity"]["memory"]["value"], "96Gi");
  EXPECT_EQ(chip["capacity"]["neuronCores"]["value"], "4");
  EXPECT_EQ(chip["consumesCounters"][0]["counterSet"], "neuron-chips");
  EXPECT_EQ(chip["consumesCounters"][0]["counters"]["device5"]["value"], "4");
  EXPECT_FALSE(chip.contains("taints"));

  const json& core = devices.at("neuroncore21");  // core 1 of chip 5
  EXPECT_EQ(core["attributes"]["resourceType"]["string"], "neuron_core");
  EXPECT_EQ(core["attributes"]["deviceId"]["int"], 5);
  EXPECT_EQ(core["attributes"]["coreId"]["int"], 21);
  EXPECT_EQ(core["consumesCounters"][0]["counters"]["device5"]["value"], "1");
  EXPECT_EQ(groupId(core, 4), groupId(chip, 4));
}

TEST(SliceBuilder, GroupIdsAreEqualExactlyWithinOneConnectedGroup) {
  const auto devices = devicesByName(buildSlices(inputsFor("trn2.48xlarge"), 1));
  auto chip = [&](int d) { return devices.at(chipDeviceName(d)); };
  EXPECT_EQ(groupId(chip(4), 4), groupId(chip(7), 4));
  EXPECT_NE(groupId(chip(3), 4), groupId(chip(4), 4));
  EXPECT_EQ(groupId(chip(0), 8), groupId(chip(7), 8));
  EXPECT_NE(groupId(chip(7), 8), groupId(chip(8), 8));
  EXPECT_EQ(groupId(chip(0), 16), groupId(chip(15), 16));
  EXPECT_NE(groupId(chip(0), 1), groupId(chip(1), 1));
}

// For every catalog type: slices the API accepts (size caps), and group ids that mean "these
// devices form a whole, NeuronLink-connected group of that size".
TEST(SliceBuilder, EveryCatalogTypeGivesValidSlicesAndConnectedGroups) {
  for (const topology::InstanceType& type : topology::allInstanceTypes()) {
    for (int lnc = 1; lnc <= type.maxLnc; ++lnc) {
      SCOPED_TRACE(std::string(type.name) + " lnc " + std::to_string(lnc));
      const SliceInputs inputs = inputsFor(std::string(type.name), lnc);
      const std::vector<json> slices = buildSlices(inputs, 1);
      std::set<std::string> names;
      for (const json& slice : slices) {
        EXPECT_TRUE(names.insert(slice["metadata"]["name"].get<std::string>()).second);
        EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], static_cast<int>(slices.size()));
        if (slice["spec"].contains("devices")) {
          EXPECT_LE(slice["spec"]["devices"].size(), 64u);
        }
        if (slice["spec"].contains("sharedCounters")) {
          EXPECT_LE(slice["spec"]["sharedCounters"].size(), 8u);
          EXPECT_LE(slice["spec"]["sharedCounters"][0]["counters"].size(), 32u);
        }
      }
      const auto devices = devicesByName(slices);
      const int chips = inputs.node.deviceCount();
      EXPECT_EQ(static_cast<int>(devices.size()), chips + inputs.node.logicalCoreCount());
      for (const auto& [name, device] : devices) {
        EXPECT_LE(device["attributes"].size() + device["capacity"].size(), 32u) << name;
      }
      const auto graph = topology::NeuronLinkGraph::fromNode(inputs.node);
      for (const int size : {4, 8, 16}) {
        std::map<std::string, topology::DeviceSet> groups;
        for (int d = 0; d < chips; ++d) {
          const std::string id = groupId(devices.at(chipDeviceName(d)), size);
          if (!id.empty()) groups[id].insert(d);
        }
        for (const auto& [id, members] : groups) {
          EXPECT_EQ(members.size(), size) << "group " << id;
          EXPECT_TRUE(graph.isConnected(members)) << "group " << id;
        }
      }
    }
  }
}

TEST(SliceBuilder, Inf2RingGroupsOnlyWhereAWholeRunFits) {
  const auto devices = devicesByName(buildSlices(inputsFor("inf2.48xlarge"), 1));
  EXPECT_FALSE(groupId(devices.at("neurondevice7"), 8).empty());
  EXPECT_TRUE(groupId(devices.at("neurondevice8"), 8).empty());  // 8-15 does not exist
  EXPECT_TRUE(groupId(devices.at("neurondevice0"), 16).empty());
  EXPECT_FALSE(devices.at("neurondevice0")["attributes"].contains("topology_x"));
}

TEST(SliceBuilder, ACutLinkTakesTheGroupIdAway) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  // Both of chip 5's links inside its row are cut (both ends, as the driver would report it):
  // row 1 (chips 4-7) is no longer connected, so none of it may be handed out as a group of 4.
  auto cut = [&](int a, int b) {
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      auto& links = inputs.node.devices[static_cast<std::size_t>(from)].connected;
      links.erase(std::remove(links.begin(), links.end(), to), links.end());
    }
  };
  cut(4, 5);
  cut(5, 6);
  ASSERT_FALSE(topology::NeuronLinkGraph::fromNode(inputs.node)
                   .isConnected(topology::DeviceSet::fromIds(std::vector<int>{4, 5, 6, 7})));
  const auto devices = devicesByName(buildSlices(inputs, 1));
  for (const char* name : {"neurondevice4", "neurondevice5", "neurondevice7"}) {
    EXPECT_TRUE(groupId(devices.at(name), 4).empty()) << name;
  }
  EXPECT_FALSE(groupId(devices.at("neurondevice0"), 4).empty());
  EXPECT_FALSE(groupId(devices.at("neurondevice8"), 4).empty());
}

TEST(SliceBuilder, UnhealthyChipIsTaintedWithItsCores) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  inputs.node.devices[3].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kEccUncorrected, "mem",
      "stats/hardware/mem_ecc_uncorrected is 2 (uncorrected ECC errors)");
  inputs.unhealthySince[3] = "2026-11-24T12:00:00Z";
  const auto devices = devicesByName(buildSlices(inputs, 1));
  ASSERT_EQ(devices.at("neurondevice3")["taints"].size(), 1u);
  const json& taint = devices.at("neurondevice3")["taints"][0];
  EXPECT_EQ(taint["key"], "neuron.aws.com/ecc-uncorrected");
  EXPECT_EQ(taint["value"], "mem");
  EXPECT_EQ(taint["effect"], "NoSchedule");
  EXPECT_EQ(taint["timeAdded"], "2026-11-24T12:00:00Z");
  EXPECT_TRUE(devices.at("neuroncore12").contains("taints"));
  EXPECT_FALSE(devices.at("neuroncore16").contains("taints"));
  EXPECT_FALSE(devices.at("neurondevice4").contains("taints"));

  for (const char* effect : {"NoExecute", "None"}) {  // dra.taintEffect
    inputs.options.health.effect = effect;
    const auto withEffect = devicesByName(buildSlices(inputs, 1));
    EXPECT_EQ(withEffect.at("neurondevice3")["taints"][0]["effect"], effect);
    EXPECT_EQ(withEffect.at("neuroncore12")["taints"][0]["effect"], effect);
  }
  EXPECT_TRUE(isTaintEffect("NoExecute"));
  EXPECT_FALSE(isTaintEffect("PreferNoSchedule"));  // a node taint's effect, not a device's
  EXPECT_FALSE(isTaintEffect("noexecute"));

  inputs.options.taints = false;  // an API without device taints: leave the chip out
  const auto hidden = devicesByName(buildSlices(inputs, 1));
  EXPECT_FALSE(hidden.contains("neurondevice3"));
  EXPECT_FALSE(hidden.contains("neuroncore12"));
  EXPECT_TRUE(hidden.contains("neurondevice4"));
}

// Kubernetes' standard PCI attributes, where discovery found them: a claim can pair a chip with a
// network card of another driver on the same PCIe root (matchAttribute).
TEST(SliceBuilder, ChipsCarryTheStandardPciAttributes) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  inputs.node.devices[5].pciBdf = "0000:15:1e.0";
  inputs.node.devices[5].pcieRoot = "pci0000:15";
  inputs.node.devices[5].numaNode = 0;
  const auto devices = devicesByName(buildSlices(inputs, 1));
  for (const char* name : {"neurondevice5", "neuroncore20"}) {
    const json& attributes = devices.at(name)["attributes"];
    EXPECT_EQ(attributes["resource.kubernetes.io/pcieRoot"], json({{"string", "pci0000:15"}}));
    EXPECT_EQ(attributes["resource.kubernetes.io/pciBusID"], json({{"string", "0000:15:1e.0"}}));
    EXPECT_EQ(attributes["resource.kubernetes.io/numaNode"], json({{"int", 0}}));
  }
  EXPECT_FALSE(
      devices.at("neurondevice4")["attributes"].contains("resource.kubernetes.io/pcieRoot"))
      << "unknown: not published";
}

// One taint per health dimension, the fault's code as its value; a second fault of the same
// dimension adds no taint.
TEST(SliceBuilder, EachHealthDimensionHasItsOwnKey) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  topology::DeviceHealth health;
  health.add({topology::HealthDimension::kHardwareError, "HBM_UNCORRECTABLE_ERROR", "kernel log"});
  health.add({topology::HealthDimension::kHardwareError, "DMA_ERROR", "kernel log"});
  health.add({topology::HealthDimension::kDeviceLost, "DeviceNodeMissing", "/dev/neuron5"});
  inputs.node.devices[5].health = health;
  const json taints = devicesByName(buildSlices(inputs, 1)).at("neurondevice5")["taints"];
  ASSERT_EQ(taints.size(), 2u) << taints.dump();
  EXPECT_EQ(taints[0]["key"], "neuron.aws.com/hardware-error");
  EXPECT_EQ(taints[0]["value"], "HBM_UNCORRECTABLE_ERROR");
  EXPECT_EQ(taints[1]["key"], "neuron.aws.com/device-lost");
  EXPECT_EQ(taints[1]["value"], "DeviceNodeMissing");

  // A chip waiting for its reset has no live fault: NoExecute evicts no one for that.
  inputs.node.devices[6].health = topology::DeviceHealth::unhealthy(
      topology::HealthDimension::kRecovery, "Recovering", "recovering: ...");
  inputs.options.health.effect = "NoExecute";
  const json recovering = devicesByName(buildSlices(inputs, 1)).at("neurondevice6")["taints"];
  EXPECT_EQ(recovering, json::array({{{"key", "neuron.aws.com/recovery"},
                                      {"value", "Recovering"},
                                      {"effect", "NoSchedule"}}}));
  EXPECT_EQ(devicesByName(buildSlices(inputs, 1)).at("neurondevice5")["taints"][0]["effect"],
            "NoExecute");
  inputs.options.health.effect = "NoSchedule";

  // Keys can be switched to another scheme's by configuration.
  auto keys = parseHealthTaintKeys("hardware-error=example.com/hw-error, unmonitored=a.b/c");
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  inputs.options.health.keys = *keys;
  const json renamed = devicesByName(buildSlices(inputs, 1)).at("neurondevice5")["taints"];
  EXPECT_EQ(renamed[0]["key"], "example.com/hw-error");
  EXPECT_EQ(renamed[1]["key"], "neuron.aws.com/device-lost");
  for (const char* bad : {"melted=example.com/x", "hardware-error", "hardware-error=nodomain",
                          "recovery=example.com/", "recovery=-bad.com/x"}) {
    EXPECT_FALSE(parseHealthTaintKeys(bad).ok()) << bad;
  }

  // The earlier releases' single key, for one release more.
  inputs.options.health.legacy = true;
  const json legacy = devicesByName(buildSlices(inputs, 1)).at("neurondevice5")["taints"];
  ASSERT_EQ(legacy.size(), 1u);
  EXPECT_EQ(legacy[0]["key"], "neuron.aws.com/unhealthy");
  EXPECT_EQ(legacy[0]["value"], "KernelHardwareError");
}

// A device whose health is unknown stays in service with an informational taint, left out where
// the API refuses the effect None; faults come before it within the API's four taints.
// A chip that came back after a fault says which checks let it in; its cores say the same.
TEST(SliceBuilder, ARecoveredChipSaysWhichChecksItPassed) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  inputs.node.devices[3].health.recoveredWith = "reset";
  auto devices = devicesByName(buildSlices(inputs, 1));
  EXPECT_EQ(devices.at("neurondevice3")["attributes"]["recoveredWith"],
            json({{"string", "reset"}}));
  EXPECT_EQ(devices.at("neuroncore12")["attributes"]["recoveredWith"], json({{"string", "reset"}}));
  EXPECT_FALSE(devices.at("neurondevice2")["attributes"].contains("recoveredWith"));
}

TEST(SliceBuilder, UnmonitoredDeviceGetsAnInformationalTaint) {
  SliceInputs inputs = inputsFor("trn2u.48xlarge");
  inputs.node.ultraServer = topology::UltraServerPosition{1, 1, "aa", "bb", {1, 2, 4}};
  for (auto& device : inputs.node.devices)
    device.health.unmonitored = {"kernel log: syslog(2) refused"};
  auto devices = devicesByName(buildSlices(inputs, 1));
  const json unmonitored = {{"key", "neuron.aws.com/unmonitored"}, {"effect", "None"}};
  EXPECT_EQ(devices.at("neurondevice0")["taints"], json::array({unmonitored}));
  EXPECT_EQ(devices.at("neuroncore1")["taints"], json::array({unmonitored}));
  EXPECT_EQ(devices.at("neuronnode")["taints"], json::array({unmonitored}));

  topology::DeviceHealth& two = inputs.node.devices[2].health;
  two.add({topology::HealthDimension::kHardwareError, "NC_UNCORRECTABLE_ERROR", "kernel log"});
  two.add({topology::HealthDimension::kEccUncorrected, "mem", "counter"});
  two.add({topology::HealthDimension::kRecovery, "Recovering", "waiting"});
  two.add({topology::HealthDimension::kDeepCheck, "Failed", "deep check"});
  inputs.reservedFor = "team/job";
  devices = devicesByName(buildSlices(inputs, 1));
  const json taints = devices.at("neurondevice2")["taints"];
  ASSERT_EQ(taints.size(), 4u) << taints.dump();
  for (const json& taint : taints)
    EXPECT_NE(taint["effect"], "None") << taints.dump();
  // The node device carries the union of its chips' taints by key, faults first.
  const json node = devices.at("neuronnode")["taints"];
  ASSERT_EQ(node.size(), 4u);
  EXPECT_EQ(node[0]["key"], "neuron.aws.com/hardware-error");

  inputs.node.devices[2].health = {};
  inputs.node.devices[2].health.unmonitored = {"counters: unreadable"};
  inputs.options.noneEffect = false;  // 1.34 refuses the effect None
  devices = devicesByName(buildSlices(inputs, 1));
  EXPECT_EQ(devices.at("neurondevice2")["taints"],
            json::array({{{"key", "neuron.aws.com/reserved"}, {"effect", "NoSchedule"}}}));
  inputs.options.health.unmonitoredEffect = "NoSchedule";  // chosen: kept off new claims
  devices = devicesByName(buildSlices(inputs, 1));
  EXPECT_EQ(devices.at("neurondevice2")["taints"].size(), 2u);
}

TEST(SliceBuilder, WithoutCoreDevicesThereAreNoCountersAndOneSlice) {
  SliceInputs inputs = inputsFor("trn2.48xlarge");
  inputs.options.coreDevices = false;
  const std::vector<json> slices = buildSlices(inputs, 1);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_FALSE(slices[0]["spec"].contains("sharedCounters"));
  const auto devices = devicesByName(slices);
  EXPECT_EQ(devices.size(), 16u);
  EXPECT_FALSE(devices.at("neurondevice0").contains("consumesCounters"));
}

TEST(SliceBuilder, UltraServerNodeDeviceTakesEveryChip) {
  SliceInputs inputs = inputsFor("trn2u.48xlarge");
  inputs.node.ultraServer = topology::UltraServerPosition{1, 1, "aa", "bb", {1, 2, 4}};
  const auto devices = devicesByName(buildSlices(inputs, 1));
  const json& node = devices.at("neuronnode");
  EXPECT_EQ(node["attributes"]["resourceType"]["string"], "neuron_node");
  EXPECT_EQ(node["consumesCounters"][0]["counters"].size(), 16u);
  EXPECT_EQ(node["consumesCounters"][0]["counters"]["device15"]["value"], "4");
  EXPECT_FALSE(devices.at("neurondevice0")["attributes"].contains("topology_x"));
}

// AWS's UltraServer claims ask for `neuronnode`; it must exist whatever the core-device setting
// and whether or not the API keeps counters (1.34 and 1.35 drop them).
TEST(SliceBuilder, UltraServerNodeDeviceWithoutCoreDevicesTakesOneUnitPerChip) {
  SliceInputs inputs = inputsFor("trn2u.48xlarge");
  inputs.node.ultraServer = topology::UltraServerPosition{1, 1, "aa", "bb", {1, 2, 4}};
  inputs.options.coreDevices = false;
  const std::vector<json> slices = buildSlices(inputs, 1);
  ASSERT_EQ(slices.size(), 2u);  // the counter set, then the 16 chips and the node
  const json& counters = slices[0]["spec"]["sharedCounters"][0];
  EXPECT_EQ(counters["counters"].size(), 16u);
  EXPECT_EQ(counters["counters"]["device7"]["value"], "1");
  const auto devices = devicesByName(slices);
  EXPECT_EQ(devices.size(), 17u);
  EXPECT_EQ(devices.at("neuronnode")["consumesCounters"][0]["counters"].size(), 16u);
  EXPECT_EQ(devices.at("neuronnode")["consumesCounters"][0]["counters"]["device7"]["value"], "1");
  EXPECT_EQ(devices.at("neurondevice7")["consumesCounters"][0]["counters"],
            (json{{"device7", {{"value", "1"}}}}));
  // A trn2 (no UltraServer) with core devices off still needs no counters.
  SliceInputs plain = inputsFor("trn2.48xlarge");
  plain.options.coreDevices = false;
  EXPECT_FALSE(buildSlices(plain, 1)[0]["spec"].contains("sharedCounters"));
}

TEST(SliceBuilder, UltraServerNodeDeviceWhereTheApiKeepsNoCounters) {
  SliceInputs inputs = inputsFor("trn2u.48xlarge");
  inputs.node.ultraServer = topology::UltraServerPosition{1, 1, "aa", "bb", {1, 2, 4}};
  inputs.options.counters = false;  // core devices stay asked for, but cannot be guarded
  const std::vector<json> slices = buildSlices(inputs, 1);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_FALSE(slices[0]["spec"].contains("sharedCounters"));
  const auto devices = devicesByName(slices);
  EXPECT_EQ(devices.size(), 17u);  // 16 chips and the node, no cores
  EXPECT_FALSE(devices.at("neuronnode").contains("consumesCounters"));
  EXPECT_EQ(devices.at("neuronnode")["attributes"]["resourceType"]["string"], "neuron_node");
  EXPECT_EQ(devices.at("neuronnode")["attributes"]["ultraServerNodeId4"]["int"], 1);
}

TEST(SliceBuilder, AReservedNodeTagsEveryDeviceWithTheWorkload) {
  SliceInputs inputs = inputsFor("trn2u.48xlarge");
  inputs.node.ultraServer = topology::UltraServerPosition{1, 1, "aa", "bb", {1, 2, 4}};
  EXPECT_FALSE(
      devicesByName(buildSlices(inputs, 1)).at("neuronnode")["attributes"].contains("workloadId"));
  // Pending: tainted at once, so no stranger's claim is allocated there meanwhile; not yet
  // tagged, so not yet the workload's claims' either.
  inputs.reservedFor = "ml/train";
  for (const auto& [name, device] : devicesByName(buildSlices(inputs, 1))) {
    EXPECT_FALSE(device["attributes"].contains("workloadId")) << name;
    EXPECT_EQ(device["taints"].back(),
              (json{{"key", "neuron.aws.com/reserved"}, {"effect", "NoSchedule"}}))
        << name;
  }
  inputs.workloadId = "ml/train";  // Bound
  const auto devices = devicesByName(buildSlices(inputs, 1));
  EXPECT_EQ(devices.size(), 16u + 64u + 1u);
  for (const auto& [name, device] : devices) {
    EXPECT_EQ(device["attributes"]["workloadId"], json({{"string", "ml/train"}})) << name;
    EXPECT_EQ(device["taints"].back(),
              (json{{"key", "neuron.aws.com/reserved"}, {"effect", "NoSchedule"}}))
        << name;
  }
  // Where the API drops taints nothing would keep a stranger's chip or core claim off the
  // node: only the node device the workload's template asks for is published, tagged, and the
  // driver's check at prepare still guards it.
  inputs.options.taints = false;
  for (const SliceInputs& reserved : {inputs, [&] {
                                        SliceInputs pending = inputs;
                                        pending.workloadId.clear();
                                        return pending;
                                      }()}) {
    const auto untainted = devicesByName(buildSlices(reserved, 1));
    ASSERT_EQ(untainted.size(), 1u);
    const json& node = untainted.at("neuronnode");
    EXPECT_EQ(node["attributes"].contains("workloadId"), !reserved.workloadId.empty());
    EXPECT_FALSE(node.contains("taints"));
  }
  // Released: every device is published again.
  inputs.reservedFor.clear();
  inputs.workloadId.clear();
  EXPECT_EQ(devicesByName(buildSlices(inputs, 1)).size(), 16u + 64u + 1u);
}

TEST(SliceBuilder, DriverVersionIsPublishedAsSemver) {
  SliceInputs inputs = inputsFor("trn1.32xlarge");
  inputs.node.driverVersion = "2.24.7.0";
  EXPECT_EQ(devicesByName(buildSlices(inputs, 1))
                .at("neurondevice0")["attributes"]["neuronDriverVersion"]["version"],
            "2.24.7");
  for (const char* unusable : {"", "2.x", "02.1", "2..1", "2.1-rc1"}) {
    inputs.node.driverVersion = unusable;
    EXPECT_FALSE(devicesByName(buildSlices(inputs, 1))
                     .at("neurondevice0")["attributes"]
                     .contains("neuronDriverVersion"))
        << unusable;
  }
}

TEST(SliceBuilder, NetworkLayersComeFromNodeLabels) {
  SliceInputs inputs = inputsFor("trn1.32xlarge");
  inputs.nodeLabels["topology.k8s.aws/network-node-layer-2"] = "nn-2b";
  const auto devices = devicesByName(buildSlices(inputs, 1));
  EXPECT_EQ(devices.at("neurondevice0")["attributes"]["networkNodeLayer2"]["string"], "nn-2b");
  EXPECT_FALSE(devices.at("neurondevice0")["attributes"].contains("networkNodeLayer1"));
}

TEST(SliceBuilder, SliceNamesStayWithinTheApiLimit) {
  EXPECT_EQ(sliceName("ip-10-0-0-1", 2), "ip-10-0-0-1-neuron.aws.com-2");
  const std::string longName(250, 'n');
  const std::string name = sliceName(longName, 12);
  EXPECT_LE(name.size(), 253u);
  EXPECT_NE(name, sliceName(longName + "x", 12));
}

TEST(SliceBuilder, LegacyFaultKindsAreLabelWords) {
  using topology::DeviceHealth;
  using topology::HealthDimension;
  const auto kindOf = [](HealthDimension dimension, const char* code) {
    return legacyFaultKind(DeviceHealth::unhealthy(dimension, code, "text"));
  };
  EXPECT_EQ(kindOf(HealthDimension::kHardwareError, "HBM_UNCORRECTABLE_ERROR"),
            "KernelHardwareError");
  EXPECT_EQ(kindOf(HealthDimension::kEccUncorrected, "mem"), "UncorrectedECC");
  EXPECT_EQ(kindOf(HealthDimension::kDeviceLost, "DeviceNodeMissing"), "DeviceNodeMissing");
  EXPECT_EQ(kindOf(HealthDimension::kDeviceLost, "ResetStateInvalid"), "ResetFailed");
  EXPECT_EQ(kindOf(HealthDimension::kDeviceLost, "AttributeInvalid"), "Unhealthy");
  EXPECT_EQ(kindOf(HealthDimension::kRecovery, "Recovering"), "Recovering");
  EXPECT_EQ(kindOf(HealthDimension::kRecovery, "SelfTestFailed"), "SelfTestFailed");
  EXPECT_EQ(kindOf(HealthDimension::kDeepCheck, "Failed"), "DeepCheckFailed");
}

TEST(DriverNames, ParseOnlyWhatThePoolPublishes) {
  EXPECT_EQ(parseDeviceName("neurondevice12")->index, 12);
  EXPECT_EQ(parseDeviceName("neuroncore0")->kind, NamedDevice::Kind::kCore);
  EXPECT_EQ(parseDeviceName("neuronnode")->kind, NamedDevice::Kind::kNode);
  for (const char* bad : {"neurondevice", "neurondevice01", "neurondevice-1", "neuroncore1x",
                          "gpu0", "", "neurondevice99999"}) {
    EXPECT_FALSE(parseDeviceName(bad).has_value()) << bad;
  }
}

// The publisher writes back a slice someone else changed (audit L2). What the API returns of our
// own write is the same content: another pool generation, and defaults at their zero values.
TEST(SliceContent, OnlyAnotherWritersChangesCount) {
  const json published = buildSlices(inputsFor("trn2.48xlarge"), 0)[1];
  json stored = published;
  stored["metadata"]["resourceVersion"] = "812";
  stored["spec"]["pool"]["generation"] = 9;
  stored["spec"]["devices"][0]["allowMultipleAllocations"] = false;  // a default
  stored["spec"]["perDeviceNodeSelection"] = false;
  EXPECT_TRUE(sameSliceContent(stored, published));

  json edited = stored;
  edited["spec"]["devices"][0]["attributes"]["instanceType"]["string"] = "edited";
  EXPECT_FALSE(sameSliceContent(edited, published));
  json tainted = stored;
  tainted["spec"]["devices"][2]["taints"] =
      json::array({{{"key", "someone/else"}, {"effect", "NoSchedule"}}});
  EXPECT_FALSE(sameSliceContent(tainted, published));
  json shorter = stored;
  shorter["spec"]["devices"].erase(shorter["spec"]["devices"].begin());
  EXPECT_FALSE(sameSliceContent(shorter, published));
  EXPECT_FALSE(sameSliceContent(json::object(), published));
}

}  // namespace
}  // namespace torus::dra
