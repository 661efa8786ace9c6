// What the UltraServer operator writes: AWS's field names in NeuronUltraServer and workload
// statuses, and a claim template that selects only the workload's own whole-node devices.
#include "ultraserver-operator/model/operator_objects.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/unit/ultraserver/operator_fixtures.h"

namespace torus::ultraserver {
namespace {

using nlohmann::json;

UltraServer fourNodes() {
  UltraServer server;
  server.name = "us-ab";
  server.serverId = "AB";
  server.instanceType = "trn2u.48xlarge";
  for (int id = 0; id < 4; ++id) {
    MemberNode node;
    node.name = "node-" + std::to_string(id);
    node.nodeId = id;
    node.ready = id != 2;
    server.nodes.push_back(node);
  }
  return server;
}

TEST(OperatorObjects, UltraServerSpecAndStatusUseAwsFields) {
  const UltraServer server = fourNodes();
  const json object = ultraServerObject(server, "kube-system");
  EXPECT_EQ(object["apiVersion"], "neuron.aws.com/v1beta1");
  EXPECT_EQ(object["kind"], "NeuronUltraServer");
  EXPECT_EQ(object["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(object["spec"]["instanceType"], "trn2u.48xlarge");
  EXPECT_EQ(object["spec"]["topology"][2], (json{{"nodeId", 2},
                                                 {"nodeName", "node-2"},
                                                 {"linkStatusHorizontal", "down"},
                                                 {"linkStatusVertical", "down"}}));

  Allocation allocation{"ml/train", "us-ab", 0, {"node-0", "node-1"}, "Bound", "t0"};
  const json status = ultraServerStatus(server, {allocation}, json(), "t1");
  EXPECT_EQ(status["state"], "Degraded");
  EXPECT_EQ(status["allocations"][0], (json{{"workloadRef", "ml/train"},
                                            {"ultraserverIndex", 0},
                                            {"allocatedNodes", {"node-0", "node-1"}},
                                            {"nodeCount", 2},
                                            {"leaderNodeName", "node-0"},
                                            {"phase", "Bound"},
                                            {"allocatedAt", "t0"}}));
  EXPECT_EQ(status["conditions"][0]["message"],
            "3 of 4 nodes in the cluster are Ready (not: node-2)");
  // A later pass with nothing changed writes the same status (no churn of transition times).
  EXPECT_EQ(ultraServerStatus(server, {allocation}, status, "t2"), status);
}

TEST(OperatorObjects, ClaimTemplateSelectsTheWorkloadsWholeNodes) {
  Workload train = workload("train", 4, 1, "");
  // Unlike the name, so that each field below is seen to come from its own source.
  train.uid = "u1";
  train.claimTemplate = "train-rct";
  train.logicalNeuronCore = 1;
  const json rct = claimTemplate(train);
  EXPECT_EQ(rct["metadata"]["name"], "train-rct");
  EXPECT_EQ(rct["metadata"]["ownerReferences"][0]["uid"], "u1");
  EXPECT_EQ(rct["spec"]["metadata"]["annotations"]["neuron.aws.com/workload"], "ml/train");
  const json& request = rct["spec"]["spec"]["devices"]["requests"][0];
  EXPECT_EQ(request["exactly"]["deviceClassName"], "neuron.aws.com");
  EXPECT_EQ(request["exactly"]["selectors"][0]["cel"]["expression"],
            "device.attributes[\"neuron.aws.com\"].resourceType == \"neuron_node\" && "
            "\"workloadId\" in device.attributes[\"neuron.aws.com\"] && "
            "device.attributes[\"neuron.aws.com\"].workloadId == \"ml/train\"");
  EXPECT_EQ(
      request["exactly"]["tolerations"][0],
      (json{{"key", "neuron.aws.com/reserved"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}));
  const json& configs = rct["spec"]["spec"]["devices"]["config"];
  EXPECT_EQ(configs[0]["opaque"]["parameters"]["kind"], "UltraServerConfig");
  EXPECT_EQ(configs[0]["opaque"]["parameters"]["ultraserverMode"], 4);
  EXPECT_EQ(configs[1]["opaque"]["parameters"]["logicalNeuronCore"], 1);
}

TEST(OperatorObjects, WorkloadStatusConditionsFollowTheState) {
  Workload workload;
  workload.generation = 3;
  WorkloadOutcome waiting;
  waiting.state = WorkloadState::kPending;
  waiting.reason = "InsufficientUltraServers";
  waiting.message = "waiting for 1 UltraServer";
  const json status = workloadStatus(workload, waiting, json(), "t1");
  EXPECT_EQ(status["state"], "Pending");
  EXPECT_EQ(status["observedGeneration"], 3);
  EXPECT_EQ(status["conditions"][0]["type"], "Ready");
  EXPECT_EQ(status["conditions"][0]["status"], "False");
  EXPECT_EQ(status["conditions"][0]["message"], "waiting for 1 UltraServer");
  EXPECT_FALSE(status.contains("allocatedAt"));

  WorkloadOutcome allocated;
  allocated.state = WorkloadState::kAllocated;
  allocated.reason = "Allocated";
  allocated.allocatedUltraServers = {"us-ab"};
  allocated.allocatedAt = "t0";
  const json after = workloadStatus(workload, allocated, status, "t2");
  EXPECT_EQ(after["conditions"][0]["status"], "True");
  EXPECT_EQ(after["conditions"][0]["lastTransitionTime"], "t2");
  EXPECT_EQ(after["conditions"][2]["lastTransitionTime"], "t1") << "Degraded stayed False";
  EXPECT_EQ(after["allocatedUltraServers"], json::array({"us-ab"}));
}

}  // namespace
}  // namespace torus::ultraserver
