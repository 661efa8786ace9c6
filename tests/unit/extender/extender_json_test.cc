#include "scheduler-extender/server/extender_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"

namespace torus::extender {
namespace {

// Requests captured from a real kube-scheduler (tests/fixtures/captures/README.md).
std::string capture(const std::string& name) {
  auto text =
      readSmallFile(std::string(TORUS_SOURCE_DIR) + "/tests/fixtures/captures/" + name, 1 << 20);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : "";
}

TEST(ExtenderJson, ParsesKubeSchedulersNodeCacheRequest) {
  auto args = parseExtenderArgs(capture("nodecachecapable-filter.request.json"));
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_FALSE(args->fullNodes);
  EXPECT_EQ(args->nodeNames, (std::vector<std::string>{"fake-trn-node-1", "fake-trn-node-2"}));
  EXPECT_EQ(args->pod.resourceName, "aws.amazon.com/neuroncore");
  EXPECT_EQ(args->pod.count, 2);
  EXPECT_EQ(args->pod.unit, topology::AllocationUnit::kCore);
  EXPECT_FALSE(args->pod.uid.empty());
}

TEST(ExtenderJson, ParsesTheFullNodeListWithInstanceTypes) {
  auto args = parseExtenderArgs(capture("filter.request.json"));
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_TRUE(args->fullNodes);
  ASSERT_EQ(args->nodes.size(), 2U);
  EXPECT_EQ(args->nodes[0].instanceType, "trn1.32xlarge");
  auto real = parseExtenderArgs(capture("filter-real-kubelet-node.request.json"));
  ASSERT_TRUE(real.ok()) << real.error().message;
}

// Both extender modes send the same ExtenderBindingArgs (Go field names, no JSON tags).
TEST(ExtenderJson, ParsesKubeSchedulersBindRequests) {
  auto full = parseBindingArgs(capture("bind.request.json"));
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_EQ(full->podName, "neuron-a-full");
  EXPECT_EQ(full->podNamespace, "default");
  EXPECT_EQ(full->podUid, "f40c62ef-a3e2-4bad-b29a-2326c44096b8");
  EXPECT_EQ(full->node, "fake-trn-node-1");
  auto cached = parseBindingArgs(capture("nodecachecapable-bind.request.json"));
  ASSERT_TRUE(cached.ok()) << cached.error().message;
  EXPECT_EQ(cached->podName, "neuron-a-nodecache");
  EXPECT_EQ(cached->node, "fake-trn-node-2");
}

TEST(ExtenderJson, TopLevelKeysAreCaseInsensitiveLikeGo) {
  auto args = parseExtenderArgs(
      R"({"pod":{"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"resources":)"
      R"({"limits":{"aws.amazon.com/neuron":"4"}}}]}},"nodenames":["a"]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->pod.count, 4);
  EXPECT_EQ(args->pod.unit, topology::AllocationUnit::kDevice);
  EXPECT_EQ(args->pod.namespace_, "default");
  auto binding = parseBindingArgs(R"({"podname":"p","PODNAMESPACE":"ns","PodUid":"u","node":"n"})");
  ASSERT_TRUE(binding.ok()) << binding.error().message;
  EXPECT_EQ(binding->node, "n");
}

TEST(ExtenderJson, ContainersAddUpAndInitContainersTakeTheMax) {
  auto args = parseExtenderArgs(R"({"Pod":{"metadata":{"name":"p"},"spec":{
      "initContainers":[{"resources":{"requests":{"aws.amazon.com/neuroncore":"6"}}}],
      "containers":[{"resources":{"requests":{"aws.amazon.com/neuroncore":2}}},
                    {"resources":{"limits":{"aws.amazon.com/neuroncore":"3"}}}]}},
      "NodeNames":[]})");
  ASSERT_TRUE(args.ok()) << args.error().message;
  EXPECT_EQ(args->pod.count, 6);
  auto plain = parseExtenderArgs(
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{}]}},"NodeNames":["a"]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->pod.wantsNeuron());
}

TEST(ExtenderJson, RepliesStayValidWhateverBytesTheRequestHeld) {
  // An error naming a request's invalid UTF-8 is answered, not thrown (it was an HTTP 500).
  const std::string reply = bindingResultJson("pod \xff\xfe is unknown");
  EXPECT_NE(reply.find("pod \xef\xbf\xbd"), std::string::npos) << reply;
  EXPECT_NO_THROW(preemptionResultJson({{"n\xff", {"u\xc3"}}}, {}));
}

TEST(ExtenderJson, ReadsThePodsPriority) {
  auto high = parseExtenderArgs(
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":-2147483648}},"NodeNames":[]})");
  ASSERT_TRUE(high.ok()) << high.error().message;
  EXPECT_EQ(high->pod.priority, -2147483648LL);
  auto unset = parseExtenderArgs(R"({"Pod":{"metadata":{"name":"p"},"spec":{}},"NodeNames":[]})");
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->pod.priority, 0);
}

// Preferences kube-scheduler's score plugins weigh keep a pod's every node in filter; required
// rules and DoNotSchedule spread constraints are filters, not preferences.
TEST(ExtenderJson, ReadsWhetherThePodStatesScoringPreferences) {
  const auto states = [](const std::string& spec) {
    auto args = parseExtenderArgs(R"({"Pod":{"metadata":{"name":"p"},"spec":)" + spec +
                                  R"(},"NodeNames":[]})");
    EXPECT_TRUE(args.ok()) << spec;
    return args.ok() && args->pod.statesPreferences;
  };
  EXPECT_FALSE(states("{}"));
  EXPECT_FALSE(
      states(R"({"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Exists"}]}]}}}})"));
  EXPECT_FALSE(states(R"({"affinity":{"nodeAffinity":{
      "preferredDuringSchedulingIgnoredDuringExecution":[]}}})"));
  EXPECT_FALSE(states(R"({"topologySpreadConstraints":[{"maxSkew":1,
      "topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"}]})"));
  EXPECT_TRUE(
      states(R"({"affinity":{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":
      [{"weight":1,"preference":{"matchExpressions":[{"key":"k","operator":"Exists"}]}}]}}})"));
  for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
    EXPECT_TRUE(states(std::string(R"({"affinity":{")") + kind +
                       R"(":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1}]}}})"))
        << kind;
  }
  EXPECT_TRUE(states(R"({"topologySpreadConstraints":[{"maxSkew":1,
      "topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]})"));
  EXPECT_TRUE(states(R"({"topologySpreadConstraints":[{"whenUnsatisfiable":7}]})"))
      << "malformed: the full scoring";
  EXPECT_TRUE(states(R"({"topologySpreadConstraints":"spread"})"));
}

TEST(ExtenderJson, BadInputNamesTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{", "request body: not valid JSON"},
      {"", "request body: empty; expected a JSON object"},
      {" \n", "request body: empty; expected a JSON object"},
      {"[]", "request body: expected an object, got array"},
      {R"({"NodeNames":["a"]})", "Pod: missing"},
      {R"({"Pod":7,"NodeNames":[]})", "Pod: expected a Pod object, got number"},
      {R"({"Pod":{"spec":{}},"NodeNames":[]})", "Pod.metadata: missing"},
      {R"({"Pod":{"metadata":{"name":5},"spec":{}},"NodeNames":[]})",
       "Pod.metadata.name: expected a string, got number"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{}}})", "NodeNames: missing"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{}},"NodeNames":"a"})",
       "NodeNames: expected a list, got string"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{}},"NodeNames":[1]})",
       "NodeNames[0]: expected a string, got number"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"aws.amazon.com/neuroncore":"1.5"}}}]}},"NodeNames":[]})",
       "Pod.spec.containers[0].resources.limits[\"aws.amazon.com/neuroncore\"]: expected a whole "
       "number"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"aws.amazon.com/neuroncore":"99999999999999999999"}}}]}},"NodeNames":[]})",
       "expected 0..4096, got \"99999999999999999999\""},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"aws.amazon.com/neuroncore":"-1"}}}]}},"NodeNames":[]})",
       "expected 0..4096, got \"-1\""},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"limits":{"aws.amazon.com/neuroncore":"1","aws.amazon.com/neuron":"1"}}}]}},"NodeNames":[]})",
       "a pod can take Neuron cores or whole devices, not both"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":{}}},"NodeNames":[]})",
       "Pod.spec.containers: expected a list, got object"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":"high"}},"NodeNames":[]})",
       "Pod.spec.priority: expected an integer, got string"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":3000000000}},"NodeNames":[]})",
       "Pod.spec.priority: 3000000000 is not a 32-bit integer"},
      {R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":-3000000000}},"NodeNames":[]})",
       "Pod.spec.priority: -3000000000 is not a 32-bit integer"},
  };
  for (const auto& [body, message] : cases) {
    auto args = parseExtenderArgs(body);
    ASSERT_FALSE(args.ok()) << body;
    EXPECT_NE(args.error().message.find(message), std::string::npos)
        << body << " -> " << args.error().message;
  }
  EXPECT_NE(parseBindingArgs(R"({"PodName":"p"})").error().message.find("PodNamespace: missing"),
            std::string::npos);
  EXPECT_NE(parseBindingArgs(R"({"PodName":1,"PodNamespace":"n","PodUID":"u","Node":"x"})")
                .error()
                .message.find("PodName: expected a string"),
            std::string::npos);
}

TEST(ExtenderJson, RepliesWithCapitalisedKeys) {
  FilterResult result;
  result.nodeNames = {"a"};
  result.failed["b"] = "full";
  const auto reply = nlohmann::json::parse(filterResultJson(result, "", false));
  EXPECT_EQ(reply["NodeNames"], nlohmann::json({"a"}));
  EXPECT_EQ(reply["FailedNodes"]["b"], "full");
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_EQ(nlohmann::json::parse(prioritiesJson({{"a", 7}}))[0]["Score"], 7);
  const auto preempt = nlohmann::json::parse(preemptionResultJson({{"n", {"u1"}}}, {{"n", 2}}));
  EXPECT_EQ(preempt["NodeNameToMetaVictims"]["n"]["Pods"][0]["UID"], "u1");
  EXPECT_EQ(preempt["NodeNameToMetaVictims"]["n"]["NumPDBViolations"], 2);
}

TEST(ExtenderJson, FullNodeModeReturnsTheKeptNodeObjects) {
  const std::string body = capture("filter.request.json");
  FilterResult result;
  result.nodeNames = {"fake-trn-node-1"};
  const auto reply = nlohmann::json::parse(filterResultJson(result, body, true));
  ASSERT_EQ(reply["Nodes"]["items"].size(), 1U);
  EXPECT_EQ(reply["Nodes"]["items"][0]["metadata"]["name"], "fake-trn-node-1");
}

TEST(ExtenderJson, PreemptionVictimsInBothForms) {
  auto meta = parsePreemptionArgs(capture("nodecachecapable-preempt.request.json"));
  ASSERT_TRUE(meta.ok()) << meta.error().message;
  EXPECT_EQ(meta->victimUidsByNode.size(), 2U);
  auto full = parsePreemptionArgs(capture("preempt.request.json"));
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_FALSE(full->victimUidsByNode.empty());
}

}  // namespace
}  // namespace torus::extender
