// The extender against an API stand-in, on what the node agents publish around UltraServers and
// restarts: a gang holding the two nodes of a pair whole is told at bind that it runs as one
// UltraServer job (the device plugin then sets NEURON_RT_ULTRASERVER_*), and a node whose device
// plugin is restarting (its agent's taint) takes no pod, nor a bind already on its way there.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/integration/extender/extender_api_fixture.h"

namespace torus::testing {
namespace {

using nlohmann::json;

json ultraServerNode(const std::string& name, const std::string& pair) {
  json node = makeNode(name, "trn2u.48xlarge");
  json& labels = node["metadata"]["labels"];
  labels["neuron.amazonaws.com/ultraserver-server-id-4"] = "us-a";
  labels["neuron.amazonaws.com/ultraserver-server-id-2"] = pair;
  return node;
}

json bindRequest(const json& pod, const std::string& node) {
  return {{"PodName", pod["metadata"]["name"]},
          {"PodNamespace", pod["metadata"]["namespace"]},
          {"PodUID", pod["metadata"]["uid"]},
          {"Node", node}};
}

TEST_F(ExtenderApiTest, AGangOnAPairOfUltraServerNodesIsToldItRunsAsOneJob) {
  api_.put("nodes", ultraServerNode("us-0", "pair-0"));
  api_.put("nodes", ultraServerNode("us-1", "pair-0"));
  std::vector<json> pods;
  for (int i = 0; i < 2; ++i) {
    json pod = makePod("ml", "rank-" + std::to_string(i), kDevices, 16);
    pod["metadata"]["labels"] = {{"torus.dev/gang", "pair"}, {"torus.dev/gang-size", "2"}};
    api_.put("pods", pod);
    pods.push_back(*api_.get("pods", "ml/rank-" + std::to_string(i)));
  }
  // Planned once the extender's informers show both members, on the pair: the test's precondition
  // is that the extender sees both of its nodes first (with one of them unseen, trn-a and the
  // other are as good a place for a gang of two whole nodes).
  ASSERT_TRUE(eventually([&] { return freeCores("us-0") != "?" && freeCores("us-1") != "?"; }));
  json filtered;
  ASSERT_TRUE(eventually([&] {
    filtered = post("filter", {{"Pod", pods[0]}, {"NodeNames", {"us-0", "us-1", "trn-a"}}});
    return filtered["Error"] == "" && filtered["NodeNames"].size() == 1;
  })) << filtered.dump();
  std::set<std::string> nodes;
  for (const json& pod : pods) {
    const json held = allocationOf("ml/" + pod["metadata"]["name"].get<std::string>());
    ASSERT_TRUE(held.is_object()) << state().dump();
    nodes.insert(held["node"].get<std::string>());
    // Each member's own cycle: filter (only its planned node passes), then bind.
    ASSERT_EQ(post("filter", {{"Pod", pod}, {"NodeNames", {"us-0", "us-1", "trn-a"}}})["NodeNames"],
              json::array({held["node"]}));
    EXPECT_EQ(post("bind", bindRequest(pod, held["node"]))["Error"], "");
    const json bound = *api_.get("pods", "ml/" + pod["metadata"]["name"].get<std::string>());
    EXPECT_EQ(bound["metadata"]["annotations"]["AWS_NEURON_IDS"],
              "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
    EXPECT_EQ(bound["metadata"]["annotations"]["torus.dev/ultraserver-nodes"], "2");
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"us-0", "us-1"}));

  // A pod outside any gang on the same kind of node gets no such note.
  api_.put("nodes", ultraServerNode("us-2", "pair-1"));
  api_.put("pods", makePod("ml", "alone", kDevices, 16));
  const json alone = *api_.get("pods", "ml/alone");
  ASSERT_TRUE(eventually([&] { return freeCores("us-2") != "?"; }));
  ASSERT_EQ(post("filter", {{"Pod", alone}, {"NodeNames", {"us-2"}}})["NodeNames"],
            json::array({"us-2"}));
  ASSERT_EQ(post("bind", bindRequest(alone, "us-2"))["Error"], "");
  EXPECT_FALSE(api_.get("pods", "ml/alone")
                   ->at("metadata")
                   .at("annotations")
                   .contains("torus.dev/ultraserver-nodes"));
}

TEST_F(ExtenderApiTest, ANodeWhoseDevicePluginRestartsTakesNoPodNorABindOnItsWay) {
  api_.put("pods", makePod("ml", "late", kCores, 4));
  const json pod = *api_.get("pods", "ml/late");
  json filtered = post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}});
  ASSERT_EQ(filtered["NodeNames"], json::array({"trn-a"})) << filtered.dump();

  // The stopping agent's taint arrives between kube-scheduler's filter and its bind.
  json restarting = makeNode("trn-a", "trn2.48xlarge");
  restarting["spec"]["taints"] =
      json::array({{{"key", "torus.dev/device-plugin-restarting"}, {"effect", "NoSchedule"}}});
  api_.put("nodes", restarting);
  ASSERT_TRUE(eventually([&] {
    filtered = post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}});
    return filtered["NodeNames"].empty();
  })) << filtered.dump();
  const json refused = post("bind", bindRequest(pod, "trn-a"));
  EXPECT_NE(refused["Error"], "");
  EXPECT_FALSE(api_.get("pods", "ml/late")->at("spec").contains("nodeName"));
  EXPECT_TRUE(allocationOf("ml/late").is_null()) << "a refused bind holds nothing";

  // The next agent serves kubelet and removes the taint: the pod's next cycle binds.
  api_.put("nodes", makeNode("trn-a", "trn2.48xlarge"));
  json bound;
  ASSERT_TRUE(eventually([&] {
    post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}});
    bound = post("bind", bindRequest(pod, "trn-a"));
    return bound["Error"] == "";
  })) << bound.dump();
  EXPECT_EQ(api_.get("pods", "ml/late")->at("spec").at("nodeName"), "trn-a");
}

}  // namespace
}  // namespace torus::testing
