// Who holds each core, as the metrics label it: the device plugin's holders and the DRA driver's
// claims joined into tenancies, labels for cores and devices, torus_allocation_info, and
// CloudWatch's Neuron receiver's lookup through pod-resources agreeing with every label.
#include "node-runtime/agent/core_tenancy.h"

#include <random>

#include <gtest/gtest.h>

#include "device-plugin/resource_kind.h"

namespace torus::agent {
namespace {

using metrics::CoreTenants;
using plugin::ResourceKind;
using topology::CoreSet;

topology::Node trn2() {
  auto node = topology::catalogNode("trn2.48xlarge");  // 16 devices, 4 cores each at LNC 2
  EXPECT_TRUE(node.ok());
  return *node;
}

std::string labelValue(const metrics::Labels& labels, const std::string& key) {
  for (const auto& [name, value] : labels) {
    if (name == key) return value;
  }
  return "<absent>";
}

TEST(CoreTenancy, PluginHoldersAreLabelledByPodNamespaceAndContainer) {
  const topology::Node node = trn2();
  plugin::Assignments assignments;
  assignments.holders.push_back(
      {"team-a/trainer-0", "main", ResourceKind::kNeuronCore, CoreSet::range(4, 2)});
  assignments.holders.push_back(
      {"team-b/bert", "serve", ResourceKind::kNeuron, CoreSet::fromIds(std::vector<int>{3})});
  const CoreTenants tenants(node, tenanciesOf(node, assignments, {}, {}));

  EXPECT_EQ(labelValue(tenants.coreLabels(5), "pod"), "trainer-0");
  EXPECT_EQ(labelValue(tenants.coreLabels(5), "namespace"), "team-a");
  EXPECT_EQ(labelValue(tenants.coreLabels(5), "container"), "main");
  // A whole device: all four of its cores (12..15) and the device itself.
  for (int core = 12; core < 16; ++core)
    EXPECT_EQ(labelValue(tenants.coreLabels(core), "pod"), "bert") << core;
  EXPECT_EQ(labelValue(tenants.deviceLabels(3), "container"), "serve");
  // Free cores and devices carry the labels, empty.
  EXPECT_EQ(tenants.coreLabels(6), (metrics::Labels{{"pod", ""},
                                                    {"namespace", ""},
                                                    {"container", ""},
                                                    {"dra_claim_name", ""},
                                                    {"dra_claim_namespace", ""},
                                                    {"dra_device_name", ""},
                                                    {"dra_pool_name", ""},
                                                    {"dra_driver_name", ""}}));
  EXPECT_EQ(labelValue(tenants.deviceLabels(0), "pod"), "");
}

TEST(CoreTenancy, ADeviceSplitBetweenPodsNamesBothAndEachCoreItsOwn) {
  const topology::Node node = trn2();
  plugin::Assignments assignments;
  assignments.holders.push_back(
      {"ns/a", "c1", ResourceKind::kNeuronCore, CoreSet::fromIds(std::vector<int>{8})});
  assignments.holders.push_back(
      {"ns/b", "c2", ResourceKind::kNeuronCore, CoreSet::fromIds(std::vector<int>{10})});
  const CoreTenants tenants(node, tenanciesOf(node, assignments, {}, {}));
  EXPECT_EQ(labelValue(tenants.coreLabels(8), "pod"), "a");
  EXPECT_EQ(labelValue(tenants.coreLabels(10), "pod"), "b");
  EXPECT_EQ(labelValue(tenants.deviceLabels(2), "pod"), "a,b");
  EXPECT_EQ(labelValue(tenants.deviceLabels(2), "namespace"), "ns");
  EXPECT_EQ(labelValue(tenants.deviceLabels(2), "container"), "c1,c2");
}

TEST(CoreTenancy, ClaimsAreLabelledByEveryContainerKubeletListsForThem) {
  const topology::Node node = trn2();
  dra::ResolvedClaim claim;
  claim.ref = {"uid-1", "ml", "pair"};
  claim.pool = "node-a";
  claim.cores = CoreSet::range(16, 8);  // devices 4 and 5
  for (const int chip : {4, 5}) {
    const std::string name = "neurondevice" + std::to_string(chip);
    claim.devices.push_back({{"chips"}, name, *dra::parseDeviceName(name), false, {}});
  }
  dra::ResolvedClaim unlisted;
  unlisted.ref = {"uid-2", "ml", "not-yet"};
  unlisted.cores = CoreSet::range(0, 4);
  unlisted.devices.push_back(
      {{"chips"}, "neurondevice0", *dra::parseDeviceName("neurondevice0"), false, {}});
  const dra::PreparedClaims claims = {{"uid-1", claim}, {"uid-2", unlisted}};
  const std::vector<dra::ClaimHolder> holders = {
      {"ml", "pair", "ml", "worker", "train"},
      {"ml", "pair", "ml", "worker", "sidecar"},
      {"other", "pair", "other", "elsewhere", "x"},  // same claim name, another namespace
  };
  const auto tenancies = tenanciesOf(node, {}, claims, holders);
  ASSERT_EQ(tenancies.size(), 4U);  // two containers, two devices each
  EXPECT_EQ(tenancies[0].resource, "neuron.aws.com");
  const CoreTenants tenants(node, tenancies);
  EXPECT_EQ(labelValue(tenants.coreLabels(17), "pod"), "worker");
  EXPECT_EQ(labelValue(tenants.coreLabels(17), "container"), "sidecar,train");
  EXPECT_EQ(labelValue(tenants.deviceLabels(5), "namespace"), "ml");
  EXPECT_EQ(labelValue(tenants.coreLabels(0), "pod"), "") << "no container listed yet";
  // The claim's labels, as NVIDIA's DRA exporter names them; each core names its own device.
  EXPECT_EQ(labelValue(tenants.coreLabels(17), "dra_claim_name"), "pair");
  EXPECT_EQ(labelValue(tenants.coreLabels(17), "dra_claim_namespace"), "ml");
  EXPECT_EQ(labelValue(tenants.coreLabels(17), "dra_device_name"), "neurondevice4");
  EXPECT_EQ(labelValue(tenants.coreLabels(21), "dra_device_name"), "neurondevice5");
  EXPECT_EQ(labelValue(tenants.deviceLabels(5), "dra_pool_name"), "node-a");
  EXPECT_EQ(labelValue(tenants.deviceLabels(5), "dra_driver_name"), "neuron.aws.com");
  EXPECT_EQ(labelValue(tenants.coreLabels(0), "dra_claim_name"), "");
}

// A core device names itself; a device the claim only has admin access to is not held.
TEST(CoreTenancy, EachClaimDeviceLabelsItsOwnCores) {
  const topology::Node node = trn2();
  dra::ResolvedClaim claim;
  claim.ref = {"uid-1", "ml", "cores"};
  claim.pool = "node-a";
  claim.cores = CoreSet::fromIds(std::vector<int>{37});
  for (const std::string name : {"neuroncore37", "neurondevice2"}) {
    claim.devices.push_back({{"r"}, name, *dra::parseDeviceName(name), false, {}});
  }
  const auto tenancies =
      tenanciesOf(node, {}, {{"uid-1", claim}}, {{"ml", "cores", "ml", "p", "c"}});
  ASSERT_EQ(tenancies.size(), 1U);
  EXPECT_EQ(tenancies[0].claim.device, "neuroncore37");
  EXPECT_EQ(tenancies[0].cores.toRangeString(), "37");
}

TEST(CoreTenancy, AllocationInfoHasOneSamplePerHeldCoreAndHolder) {
  const topology::Node node = trn2();
  plugin::Assignments assignments;
  assignments.holders.push_back(
      {"ns/p", "c", ResourceKind::kNeuronCore, CoreSet::fromIds(std::vector<int>{1, 62})});
  const CoreTenants tenants(node, tenanciesOf(node, assignments, {}, {}));
  metrics::PrometheusText out;
  tenants.render(out, {{"instance_type", "trn2.48xlarge"}});
  EXPECT_NE(out.text().find("torus_allocation_info{instance_type=\"trn2.48xlarge\",pod=\"p\","
                            "namespace=\"ns\",container=\"c\",resource=\"aws.amazon.com/"
                            "neuroncore\",neuroncore=\"62\",neuron_device_index=\"15\","
                            "dra_claim_name=\"\",dra_claim_namespace=\"\",dra_device_name=\"\","
                            "dra_pool_name=\"\",dra_driver_name=\"\"} 1"),
            std::string::npos)
      << out.text();
  EXPECT_EQ(std::count(out.text().begin(), out.text().end(), '\n'), 2 + 2) << "HELP, TYPE, 2";
}

// CloudWatch's Neuron receiver finds a sample's pod through pod-resources: the container whose
// aws.amazon.com/neuroncore ids hold the sample's `neuroncore` label (decimal), else whose
// aws.amazon.com/neuron or neurondevice ids hold neuroncore / neuroncore_per_device_count.
// Whatever the allocation, it must find the pod our labels name.
TEST(CoreTenancy, CloudWatchsPodResourcesLookupFindsThePodOurLabelsName) {
  const topology::Node node = trn2();
  std::mt19937 random(7);
  for (int round = 0; round < 50; ++round) {
    plugin::Assignments assignments;
    CoreSet taken;
    for (int pod = 0; pod < 6; ++pod) {
      const bool whole = random() % 2 == 0;
      const ResourceKind kind = whole ? ResourceKind::kNeuron : ResourceKind::kNeuronCore;
      const int id = static_cast<int>(random() % (whole ? 16 : 64));
      const CoreSet ids = CoreSet::fromIds(std::vector<int>{id});
      const CoreSet cores = plugin::coresOfIds(kind, node, ids);
      if (cores.intersects(taken)) continue;
      taken |= cores;
      assignments.holders.push_back({"ns/pod-" + std::to_string(pod), "c", kind, ids});
    }
    const CoreTenants tenants(node, tenanciesOf(node, assignments, {}, {}));
    for (int core = 0; core < node.logicalCoreCount(); ++core) {
      std::string found;
      for (const plugin::Holder& holder : assignments.holders) {
        const auto ids = plugin::formatIds(holder.ids);  // the strings kubelet lists
        const std::string wanted = holder.kind == ResourceKind::kNeuronCore
                                       ? std::to_string(core)
                                       : std::to_string(core / node.logicalCoresPerDevice());
        if (std::find(ids.begin(), ids.end(), wanted) != ids.end())
          found = holder.pod.substr(holder.pod.find('/') + 1);
      }
      EXPECT_EQ(labelValue(tenants.coreLabels(core), "pod"), found) << "core " << core;
    }
  }
}

}  // namespace
}  // namespace torus::agent
