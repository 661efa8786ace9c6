// Nodes and pods as the API returns them, and the torus.dev/topology annotation: what is read,
// and a clear complaint (never a crash) for each kind of bad value.
#include "scheduler-extender/kube/kube_objects.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/contracts/topology_annotation.h"

namespace torus::extender {
namespace {

using nlohmann::json;

json node(const json& labels, const json& annotations = json::object()) {
  return {{"metadata", {{"name", "n1"}, {"labels", labels}, {"annotations", annotations}}}};
}

TEST(NodeRecord, ReadsTypeLncAndUnhealthyDevices) {
  auto plain = parseNodeRecord(node({{"node.kubernetes.io/instance-type", "trn1.32xlarge"}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->instanceType, "trn1.32xlarge");
  EXPECT_EQ(plain->lnc, 0);
  auto beta = parseNodeRecord(node({{"beta.kubernetes.io/instance-type", "inf2.xlarge"}}));
  EXPECT_EQ(beta->instanceType, "inf2.xlarge");
  auto labelled = parseNodeRecord(
      node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}, {"torus.dev/lnc", "1"}}));
  EXPECT_EQ(labelled->lnc, 1);
  auto annotated = parseNodeRecord(
      node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}},
           {{"torus.dev/topology",
             R"({"v":1,"lnc":2,"devices":16,"coresPerDevice":4,"unhealthy":[2,7]})"}}));
  ASSERT_TRUE(annotated.ok());
  EXPECT_EQ(annotated->lnc, 2);
  EXPECT_EQ(annotated->unhealthy.toRangeString(), "2,7");
  EXPECT_TRUE(annotated->topologyProblem.empty());
}

TEST(NodeRecord, BadMetadataIsNamedAndTheCatalogStillServes) {
  EXPECT_FALSE(parseNodeRecord(json::object()).ok());
  EXPECT_FALSE(parseNodeRecord(json::array()).ok());
  auto badLnc = parseNodeRecord(
      node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}, {"torus.dev/lnc", "four"}}));
  ASSERT_TRUE(badLnc.ok());
  EXPECT_EQ(badLnc->lnc, 0);
  EXPECT_NE(badLnc->topologyProblem.find("torus.dev/lnc"), std::string::npos);
  auto badAnnotation = parseNodeRecord(node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}},
                                            {{"torus.dev/topology", "[1,2"}}));
  ASSERT_TRUE(badAnnotation.ok());
  EXPECT_NE(badAnnotation->topologyProblem.find("not valid JSON"), std::string::npos);
}

TEST(NodeRecord, KubeletRefusesEverythingWhileTheDevicePluginRestarts) {
  json restarting = node({{"node.kubernetes.io/instance-type", "trn2.48xlarge"}},
                         {{"torus.dev/kubelet-unavailable", R"({"aws.amazon.com/neuron":"3"})"}});
  auto serving = parseNodeRecord(restarting);
  ASSERT_TRUE(serving.ok());
  EXPECT_FALSE(serving->kubeletRefuses.everything);
  EXPECT_EQ(serving->kubeletRefuses.devices.toRangeString(), "3");
  restarting["spec"]["taints"] =
      json::array({{{"key", "example.com/other"}, {"effect", "NoSchedule"}},
                   {{"key", "torus.dev/device-plugin-restarting"}, {"effect", "NoSchedule"}}});
  auto stopped = parseNodeRecord(restarting);
  ASSERT_TRUE(stopped.ok());
  EXPECT_TRUE(stopped->kubeletRefuses.everything);
  EXPECT_TRUE(stopped->kubeletViewProblem.empty()) << "a restart is no unreadable report";
}

TEST(TopologyAnnotation, RoundTripsANode) {
  auto model = topology::catalogNode("trn2.48xlarge");
  ASSERT_TRUE(model.ok());
  model->devices[3].health =
      topology::DeviceHealth::unhealthy(topology::HealthDimension::kEccUncorrected, "mem", "ecc");
  const contracts::TopologySummary summary = contracts::summarizeTopology(*model);
  const std::string text = contracts::formatTopologyAnnotation(summary);
  auto parsed = contracts::parseTopologyAnnotation(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->instanceType, "trn2.48xlarge");
  EXPECT_EQ(parsed->lnc, 2);
  EXPECT_EQ(parsed->deviceCount, 16);
  EXPECT_EQ(parsed->coresPerDevice, 4);
  EXPECT_EQ(parsed->links, summary.links);
  EXPECT_EQ(parsed->unhealthy.toRangeString(), "3");
  EXPECT_LT(text.size(), 600U) << "compact: annotations share a 256 KiB budget";
}

// Found by tests/fuzz: a summary without links was written with "links": [], which no reader
// accepts for a node with devices.
TEST(TopologyAnnotation, RoundTripsWithoutLinks) {
  auto parsed = contracts::parseTopologyAnnotation(
      R"({"v":1,"instanceType":"trn2.48xlarge","lnc":2,"devices":16,"coresPerDevice":4})");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed->links.empty());
  auto again = contracts::parseTopologyAnnotation(contracts::formatTopologyAnnotation(*parsed));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->deviceCount, 16);
  EXPECT_TRUE(again->links.empty());
}

TEST(TopologyAnnotation, EachBadValueIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not valid JSON"},
      {"[]", "expected an object"},
      {R"({"lnc":2,"devices":16,"coresPerDevice":4})", "v: missing"},
      {R"({"v":2,"lnc":2,"devices":16,"coresPerDevice":4})", "v: expected 1..1"},
      {R"({"v":1,"lnc":"2","devices":16,"coresPerDevice":4})", "lnc: expected a number"},
      {R"({"v":1,"lnc":2,"devices":65,"coresPerDevice":4})", "devices: expected 0..64"},
      {R"({"v":1,"lnc":2,"devices":2,"coresPerDevice":4,"links":[[1]]})", "links: expected one"},
      {R"({"v":1,"lnc":2,"devices":2,"coresPerDevice":4,"links":[[1],[5]]})",
       "links[1]: expected device indices 0..1, got 5"},
      {R"({"v":1,"lnc":2,"devices":2,"coresPerDevice":4,"unhealthy":[-1]})", "unhealthy:"},
  };
  for (const auto& [text, expected] : cases) {
    auto parsed = contracts::parseTopologyAnnotation(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
        << text << " -> " << parsed.error().message;
  }
}

json boundPod(const std::string& ids, const std::string& phase) {
  const json resources = {{"aws.amazon.com/neuroncore", "4"}};
  return {
      {"metadata",
       {{"name", "p"},
        {"namespace", "ml"},
        {"uid", "u1"},
        {"annotations", {{"AWS_NEURON_IDS", ids}}}}},
      {"spec",
       {{"nodeName", "n1"},
        {"containers", json::array({{{"name", "c"}, {"resources", {{"limits", resources}}}}})}}},
      {"status", {{"phase", phase}}}};
}

TEST(PodRecord, ReadsTheHandOffAndWhetherThePodStillHoldsIt) {
  auto running = parsePodRecord(boundPod("4,5,6,7", "Running"));
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->nodeName, "n1");
  EXPECT_TRUE(running->holdsNeuron());
  EXPECT_EQ(running->assignedIds->toRangeString(), "4-7");
  EXPECT_EQ(running->demand.count, 4);
  EXPECT_FALSE(parsePodRecord(boundPod("4,5,6,7", "Succeeded"))->holdsNeuron());
  EXPECT_FALSE(parsePodRecord(boundPod("4,5,6,7", "Failed"))->holdsNeuron());
  auto garbled = parsePodRecord(boundPod("four", "Running"));
  ASSERT_TRUE(garbled.ok());
  EXPECT_FALSE(garbled->assignedIds);
  EXPECT_NE(garbled->idsProblem.find("AWS_NEURON_IDS=\"four\""), std::string::npos);
  json badQuantity = boundPod("0", "Running");
  badQuantity["spec"]["containers"][0]["resources"]["limits"]["aws.amazon.com/neuroncore"] = "1.5";
  auto refused = parsePodRecord(badQuantity);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("pod ml/p"), std::string::npos) << refused.error().message;
}

TEST(PodRecord, TellsAPodKubeSchedulerCouldNeitherPlaceNorPreemptFor) {
  json pod = json::parse(R"({"metadata":{"name":"p","namespace":"ns","uid":"u"},
    "spec":{"schedulerName":"neuron-scheduler","priority":1000,
            "containers":[{"resources":{"limits":{"aws.amazon.com/neuron":"4"}}}]},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False",
              "reason":"Unschedulable","message":"0/1 nodes are available"}]}})");
  auto waiting = parsePodRecord(pod);
  ASSERT_TRUE(waiting.ok()) << waiting.error().message;
  EXPECT_EQ(waiting->schedulerName, "neuron-scheduler");
  EXPECT_EQ(waiting->demand.priority, 1000);
  EXPECT_TRUE(waiting->waitsUnschedulable());
  json nominated = pod;
  nominated["status"]["nominatedNodeName"] = "n1";  // kube-scheduler is preempting for it
  EXPECT_FALSE(parsePodRecord(nominated)->waitsUnschedulable());
  json going = pod;
  going["metadata"]["deletionTimestamp"] = "2026-11-24T08:00:00Z";
  EXPECT_FALSE(parsePodRecord(going)->waitsUnschedulable());
  json notTried = pod;
  notTried["status"]["conditions"][0]["reason"] = "SchedulingGated";
  EXPECT_FALSE(parsePodRecord(notTried)->waitsUnschedulable());
  json noNeuron = pod;
  noNeuron["spec"]["containers"][0]["resources"] = json::object();
  EXPECT_FALSE(parsePodRecord(noNeuron)->waitsUnschedulable());
}

}  // namespace
}  // namespace torus::extender
