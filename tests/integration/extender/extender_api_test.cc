// neuron-scheduler-extender against a Kubernetes API stand-in (real HTTP on loopback, the list /
// watch / merge-patch / binding wire format): bind writes the annotations and then the Binding,
// state is rebuilt from pods after a restart, deleting a pod frees its cores, a watch ended with
// 410 Gone is healed by a re-list, and a failed bind gives its cores back.
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include "common/topology/core_set.h"
#include "tests/integration/extender/extender_api_fixture.h"

namespace torus::testing {
namespace {

using nlohmann::json;

TEST_F(ExtenderApiTest, BindWritesTheAnnotationsWithTheBinding) {
  ASSERT_EQ(schedule("train-0", kCores, 4, "trn-a")["Error"], "");
  const json pod = *api_.get("pods", "ml/train-0");
  EXPECT_EQ(pod["spec"]["nodeName"], "trn-a");
  const json& annotations = pod["metadata"]["annotations"];
  EXPECT_EQ(annotations["AWS_NEURON_IDS"], "0,1,2,3");  // one whole device at LNC 2
  EXPECT_EQ(annotations["NEURON_ALLOCATED"], "false");
  EXPECT_EQ(annotations["NEURON_RESOURCE_TYPE"], kCores);
  EXPECT_GT(std::stoll(annotations["NEURON_ALLOC_TIME"].get<std::string>()),
            1'600'000'000'000'000'000LL);
  EXPECT_EQ(annotations["example.com/owner"], "team-a");  // someone else's key survives

  // One write: a Binding pinned to the UID that carries only our four keys (the API server merges
  // them into the pod with its node).
  ASSERT_TRUE(eventually([&] { return !api_.writes().empty(); }));
  const std::vector<FakeApiServer::Write> writes = api_.writes();
  EXPECT_EQ(writes[0].method, "POST");
  EXPECT_EQ(writes[0].path, "/api/v1/namespaces/ml/pods/train-0/binding");
  EXPECT_EQ(writes[0].body["target"]["name"], "trn-a");
  EXPECT_EQ(writes[0].body["metadata"]["uid"], pod["metadata"]["uid"]);
  EXPECT_EQ(writes[0].body["metadata"]["annotations"].size(), 4U);

  // The watch confirms the assumption; a retried bind changes nothing and still succeeds.
  ASSERT_TRUE(eventually([&] { return allocationOf("ml/train-0")["assumed"] == false; }))
      << state().dump();
  EXPECT_EQ(post("bind", {{"PodName", "train-0"},
                          {"PodNamespace", "ml"},
                          {"PodUID", pod["metadata"]["uid"]},
                          {"Node", "trn-a"}})["Error"],
            "");
  EXPECT_EQ(api_.get("pods", "ml/train-0")->at("metadata").at("annotations").at("AWS_NEURON_IDS"),
            "0,1,2,3");
  EXPECT_EQ(freeCores("trn-a"), "4-63");
}

// A NeuronAllocated Event per bound pod only with --allocation-events. Events leave in order and
// a stopping extender posts what it queued, so once the second extender's Event for train-1 is
// there, one the first extender posted for train-0 would be there before it.
TEST_F(ExtenderApiTest, AllocationEventsOnlyWhenAskedFor) {
  ASSERT_EQ(schedule("train-0", kCores, 4, "trn-a")["Error"], "");
  stopExtender();
  extraFlags = {"--allocation-events"};
  ASSERT_NO_FATAL_FAILURE(startExtender());
  ASSERT_EQ(schedule("train-1", kCores, 4, "trn-b")["Error"], "");
  ASSERT_TRUE(eventually([&] { return !api_.events().empty(); }));
  const std::vector<json> events = api_.events();
  ASSERT_EQ(events.size(), 1U) << json(events).dump();
  EXPECT_EQ(events[0]["reason"], "NeuronAllocated");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "train-1");
  EXPECT_NE(events[0]["message"].get<std::string>().find("on node trn-b"), std::string::npos)
      << events[0]["message"];
}

// Regression: a second filter with the pod's UID and a smaller demand, from anyone who reaches
// the port, made kube-scheduler's later bind of a 16-core pod reserve 1 core.
TEST_F(ExtenderApiTest, BindReservesWhatThePodAsksOfTheApiNotWhatAFilterClaimed) {
  api_.put("pods", makePod("ml", "big", kCores, 16));
  const json pod = *api_.get("pods", "ml/big");
  ASSERT_EQ(post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}})["Error"], "");
  json forged = pod;
  forged["spec"]["containers"][0]["resources"]["limits"][kCores] = "1";
  post("filter", {{"Pod", forged}, {"NodeNames", {"trn-a"}}});
  ASSERT_EQ(post("bind", {{"PodName", "big"},
                          {"PodNamespace", "ml"},
                          {"PodUID", pod["metadata"]["uid"]},
                          {"Node", "trn-a"}})["Error"],
            "");
  EXPECT_EQ(api_.get("pods", "ml/big")->at("metadata").at("annotations").at("AWS_NEURON_IDS"),
            "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15");
}

TEST_F(ExtenderApiTest, StateIsServedOnlyWhenAskedFor) {
  stopExtender();
  extender_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{binaryPath("neuron-scheduler-extender"),
                               "--kubeconfig=" + kubeconfig_, "--listen=127.0.0.1:0"});
  const auto log = extender_->waitForStderr("\"serving\"", 10s);
  ASSERT_TRUE(log.has_value()) << extender_->stderrText();
  port_ = loggedPort(*log, "\"serving\"");
  const auto reply = httpGet(port_, "/state");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->substr(0, 3), "404");
  EXPECT_NE(reply->find("--serve-state"), std::string::npos) << *reply;
}

TEST_F(ExtenderApiTest, RestartRebuildsTheSameStateFromPods) {
  ASSERT_EQ(schedule("a", kCores, 4, "trn-a")["Error"], "");
  ASSERT_EQ(schedule("b", kDevices, 4, "trn-a")["Error"], "");
  ASSERT_EQ(schedule("c", kCores, 16, "trn-b")["Error"], "");
  ASSERT_TRUE(eventually([&] {
    const json now = state();
    for (const json& allocation : now["allocations"]) {
      if (allocation["assumed"] == true) return false;
    }
    return true;
  }));
  const json before = state();
  ASSERT_EQ(before["allocations"].size(), 3U);
  stopExtender();
  startExtender();
  json after = state();
  // UIDs and ids must match exactly; the order is by UID in both.
  EXPECT_EQ(after, before);
  // And the rebuilt state is used: a pod needing all of trn-a's free devices gets the rest only.
  EXPECT_EQ(freeCores("trn-a"), before["nodes"][0]["freeCores"]);
}

TEST_F(ExtenderApiTest, DeletingAPodFreesItsCores) {
  ASSERT_EQ(schedule("whole", kDevices, 16, "trn-a")["Error"], "");
  ASSERT_TRUE(eventually([&] { return freeCores("trn-a") == ""; }));
  const json full =
      post("filter", {{"Pod", makePod("ml", "next", kDevices, 16)}, {"NodeNames", {"trn-a"}}});
  EXPECT_TRUE(full["FailedNodes"].contains("trn-a")) << full.dump();
  api_.remove("pods", "ml/whole");
  ASSERT_TRUE(eventually([&] { return freeCores("trn-a") == "0-63"; }));
  api_.put("pods", makePod("ml", "next", kDevices, 16));
  const json again =
      post("filter", {{"Pod", *api_.get("pods", "ml/next")}, {"NodeNames", {"trn-a"}}});
  EXPECT_EQ(again["NodeNames"], json({"trn-a"}));
}

// kubelet can give pod A the ids promised to B and B those of A; the node's agent then rewrites
// both pods' AWS_NEURON_IDS, one after the other. The first update conflicts with the second pod
// until that one moves too; neither pod may be dropped from the state on the way, nor its cores
// offered (a pod bound there would fail admission).
TEST_F(ExtenderApiTest, SwappedHandOffsCorrectedByTheNodeAreBothTracked) {
  json first, second;
  ASSERT_NO_FATAL_FAILURE(scheduleTwoFourCorePodsOnTrnA(&first, &second));
  const std::string firstIds = first["metadata"]["annotations"]["AWS_NEURON_IDS"];
  const std::string secondIds = second["metadata"]["annotations"]["AWS_NEURON_IDS"];
  ASSERT_NE(firstIds, secondIds);
  first["metadata"]["annotations"]["AWS_NEURON_IDS"] = secondIds;
  api_.put("pods", first);
  ASSERT_TRUE(eventually([&] {
    return extender_->stderrText().find("held by another pod here") != std::string::npos;
  })) << extender_->stderrText();
  // Meanwhile the second pod still runs on the first one's old cores: none of them is offered.
  EXPECT_EQ(freeCores("trn-a"), "8-63");
  second["metadata"]["annotations"]["AWS_NEURON_IDS"] = firstIds;
  api_.put("pods", second);
  const auto asRange = [](const std::string& list) {
    return topology::CoreSet::parse(list)->toRangeString();
  };
  ASSERT_TRUE(eventually([&] {
    return allocationOf("ml/first")["ids"] == asRange(secondIds) &&
           allocationOf("ml/second")["ids"] == asRange(firstIds);
  })) << state().dump();
  EXPECT_EQ(freeCores("trn-a"), "8-63");
  // And both are released when their pods go.
  api_.remove("pods", "ml/first");
  api_.remove("pods", "ml/second");
  EXPECT_TRUE(eventually([&] { return freeCores("trn-a") == "0-63"; }));
}

// A pod parked on ids another pod holds, that ends before they are freed, must stay released
// when they are: otherwise the ended pod holds its cores until it is deleted, and a pod needing
// the whole node waits for good (CI: 36 of 200 pods Pending).
TEST_F(ExtenderApiTest, APodThatEndsWhileWaitingForItsIdsIsNotTrackedWhenTheyFree) {
  json first, second;
  ASSERT_NO_FATAL_FAILURE(scheduleTwoFourCorePodsOnTrnA(&first, &second));
  first["metadata"]["annotations"]["AWS_NEURON_IDS"] =
      second["metadata"]["annotations"]["AWS_NEURON_IDS"];
  api_.put("pods", first);
  ASSERT_TRUE(eventually([&] {
    return extender_->stderrText().find("held by another pod here") != std::string::npos;
  })) << extender_->stderrText();
  first["status"]["phase"] = "Succeeded";
  api_.put("pods", first);
  ASSERT_TRUE(eventually([&] { return allocationOf("ml/first").is_null(); })) << state().dump();
  second["status"]["phase"] = "Succeeded";
  api_.put("pods", second);
  EXPECT_TRUE(eventually([&] { return freeCores("trn-a") == "0-63"; })) << state().dump();
  EXPECT_TRUE(allocationOf("ml/first").is_null()) << state().dump();
}

TEST_F(ExtenderApiTest, FinishedPodsGiveTheirCoresBack) {
  ASSERT_EQ(schedule("job", kCores, 8, "trn-b")["Error"], "");
  ASSERT_TRUE(eventually([&] { return freeCores("trn-b") == "8-63"; }));
  json pod = *api_.get("pods", "ml/job");
  pod["status"]["phase"] = "Succeeded";
  api_.put("pods", pod);
  EXPECT_TRUE(eventually([&] { return freeCores("trn-b") == "0-63"; }));
}

// One intake: each Pod object the informer delivers is read once, and that one record serves the
// mirror, bind admission, the cross-resource preemptor and the pod cache alike.
TEST_F(ExtenderApiTest, EachPodTheInformerDeliversIsReadOnce) {
  for (const char* name : {"wait-1", "wait-2", "wait-3"})
    api_.put("pods", makePod("ml", name, kCores, 4));
  api_.put("pods", makePod("ml", "cpu-only", "example.com/none", 1));
  ASSERT_EQ(schedule("job", kCores, 8, "trn-b")["Error"], "");
  json pod = *api_.get("pods", "ml/job");
  pod["status"]["phase"] = "Succeeded";
  api_.put("pods", pod);
  api_.remove("pods", "ml/wait-3");
  // The job's end is one of the last events: once it shows, the informer has delivered the rest.
  ASSERT_TRUE(eventually([&] { return freeCores("trn-b") == "0-63"; }));
  const auto metrics = httpGet(port_, "/metrics");
  ASSERT_TRUE(metrics.has_value());
  const auto counter = [&](const std::string& name) -> long {
    const std::size_t at = metrics->find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stol(metrics->substr(at + name.size() + 2));
  };
  const long received = counter("torus_extender_pod_objects_received_total");
  EXPECT_GE(received, 7) << *metrics;  // 4 puts, the job's put, bind and end
  EXPECT_EQ(counter("torus_extender_pod_objects_read_total"), received) << *metrics;
}

TEST_F(ExtenderApiTest, AWatchEndedWithGoneIsHealedByARelist) {
  ASSERT_EQ(schedule("lost", kCores, 4, "trn-a")["Error"], "");
  ASSERT_TRUE(eventually([&] { return allocationOf("ml/lost")["assumed"] == false; }));
  const int podLists = api_.lists("pods");
  // The pod goes while no event says so; only a list can tell.
  api_.removeSilently("pods", "ml/lost");
  api_.expireWatches();
  ASSERT_TRUE(eventually([&] { return api_.lists("pods") > podLists; }));
  EXPECT_TRUE(eventually([&] { return allocationOf("ml/lost").is_null(); }));
  EXPECT_EQ(freeCores("trn-a"), "0-63");
  EXPECT_NE(extender_->stderrText().find("watch expired; listing again"), std::string::npos);
  // Watching resumes after the re-list: new pods are still seen.
  ASSERT_EQ(schedule("after", kCores, 4, "trn-a")["Error"], "");
  EXPECT_TRUE(eventually([&] { return allocationOf("ml/after")["assumed"] == false; }));
}

TEST_F(ExtenderApiTest, AFailedBindingGivesTheCoresBackAndSaysWhy) {
  api_.failNext("POST", "/binding", 500);
  const json answer = schedule("unlucky", kDevices, 8, "trn-a");
  EXPECT_NE(answer["Error"].get<std::string>().find("injected failure"), std::string::npos)
      << answer.dump();
  EXPECT_TRUE(allocationOf("ml/unlucky").is_null());
  EXPECT_EQ(freeCores("trn-a"), "0-63");
  ASSERT_TRUE(eventually([&] { return !api_.events().empty(); }));
  EXPECT_EQ(api_.events().back()["type"], "Warning");
  EXPECT_EQ(api_.events().back()["reason"], "NeuronBindFailed");
  // kube-scheduler schedules the pod again; this time it goes through.
  const json pod = *api_.get("pods", "ml/unlucky");
  ASSERT_EQ(post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}})["Error"], "");
  EXPECT_EQ(post("bind", {{"PodName", "unlucky"},
                          {"PodNamespace", "ml"},
                          {"PodUID", pod["metadata"]["uid"]},
                          {"Node", "trn-a"}})["Error"],
            "");
  EXPECT_EQ(api_.get("pods", "ml/unlucky")->at("spec").at("nodeName"), "trn-a");
}

TEST_F(ExtenderApiTest, ABindFromBeforeARestartIsRefusedAndTheNextCycleBinds) {
  api_.put("pods", makePod("ml", "early", kCores, 2));
  const json pod = *api_.get("pods", "ml/early");
  const json bind = {{"PodName", "early"},
                     {"PodNamespace", "ml"},
                     {"PodUID", pod["metadata"]["uid"]},
                     {"Node", "trn-b"}};
  // filter ran on an earlier extender; this one never passed the pod anywhere.
  const json refused = post("bind", bind);
  EXPECT_NE(refused["Error"].get<std::string>().find("filter has not passed the pod"),
            std::string::npos)
      << refused.dump();
  EXPECT_TRUE(allocationOf("ml/early").is_null());
  // kube-scheduler's next cycle filters and binds it.
  ASSERT_EQ(post("filter", {{"Pod", pod}, {"NodeNames", {"trn-b"}}})["Error"], "");
  EXPECT_EQ(post("bind", bind)["Error"], "");
  EXPECT_EQ(api_.get("pods", "ml/early")->at("metadata").at("annotations").at("AWS_NEURON_IDS"),
            "0,1");
  // A bind naming a UID the pod no longer has is refused, whatever a filter request said.
  api_.put("pods", makePod("ml", "replaced", kCores, 2));
  json older = *api_.get("pods", "ml/replaced");
  older["metadata"]["uid"] = "uid-of-an-older-pod";
  ASSERT_EQ(post("filter", {{"Pod", older}, {"NodeNames", {"trn-b"}}})["Error"], "");
  const json replaced = post("bind", {{"PodName", "replaced"},
                                      {"PodNamespace", "ml"},
                                      {"PodUID", "uid-of-an-older-pod"},
                                      {"Node", "trn-b"}});
  EXPECT_NE(replaced["Error"].get<std::string>().find("was replaced"), std::string::npos)
      << replaced.dump();
}

TEST_F(ExtenderApiTest, ABindGoesOnlyToANodeFilterPassedForThatPod) {
  api_.put("pods", makePod("ml", "picky", kCores, 4));
  const json pod = *api_.get("pods", "ml/picky");
  ASSERT_EQ(post("filter", {{"Pod", pod}, {"NodeNames", {"trn-a"}}})["NodeNames"],
            json::array({"trn-a"}));
  const json bind = {{"PodName", "picky"},
                     {"PodNamespace", "ml"},
                     {"PodUID", pod["metadata"]["uid"]},
                     {"Node", "trn-b"}};
  const json refused = post("bind", bind);
  EXPECT_NE(refused["Error"].get<std::string>().find("did not pass that node"), std::string::npos)
      << refused.dump();
  EXPECT_FALSE(api_.get("pods", "ml/picky")->at("spec").contains("nodeName"));
  EXPECT_TRUE(allocationOf("ml/picky").is_null()) << "a refused bind holds nothing";
  const auto metrics = httpGet(port_, "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->find("\ntorus_extender_unfiltered_binds_refused_total 1\n"), std::string::npos)
      << *metrics;
}

// A filter request can come from anyone who reaches the port and pass any node; bind still keeps a
// pod off a node its own rules (taints, nodeSelector) keep it off.
TEST_F(ExtenderApiTest, ABindAgainstThePodsNodeRulesIsRefusedWhateverFilterSaid) {
  json selective = makePod("ml", "selective", kCores, 4);
  selective["spec"]["nodeSelector"] = {{"team", "inference"}};
  api_.put("pods", selective);
  const json pod = *api_.get("pods", "ml/selective");
  const json bind = {{"PodName", "selective"},
                     {"PodNamespace", "ml"},
                     {"PodUID", pod["metadata"]["uid"]},
                     {"Node", "trn-b"}};
  const json filter = {{"Pod", pod}, {"NodeNames", {"trn-b"}}};
  ASSERT_EQ(post("filter", filter)["NodeNames"], json({"trn-b"}));
  json refused = post("bind", bind);
  EXPECT_NE(refused["Error"].get<std::string>().find("nodeSelector team=inference"),
            std::string::npos)
      << refused.dump();

  // trn-b now has the label, but a taint the pod does not tolerate.
  json tainted = makeNode("trn-b", "trn2.48xlarge");
  tainted["metadata"]["labels"]["team"] = "inference";
  tainted["spec"]["taints"] =
      json::array({{{"key", "team"}, {"value", "research"}, {"effect", "NoSchedule"}}});
  api_.put("nodes", tainted);
  ASSERT_TRUE(eventually([&] {
    post("filter", filter);
    refused = post("bind", bind);
    return refused["Error"].get<std::string>().find("taint team=research:NoSchedule") !=
           std::string::npos;
  })) << refused.dump();
  EXPECT_FALSE(api_.get("pods", "ml/selective")->at("spec").contains("nodeName"));
  EXPECT_TRUE(allocationOf("ml/selective").is_null());
}

TEST_F(ExtenderApiTest, PodsWithConflictingIdsNeverDoubleAllocate) {
  // Two pods that claim the same cores on one node (e.g. written by another tool): the first
  // one seen keeps them and the conflict is logged, not silently merged; the second is tracked
  // once the first has gone.
  for (const char* name : {"first", "second"}) {
    json pod = makePod("ml", name, kCores, 4);
    pod["spec"]["nodeName"] = "trn-b";
    pod["status"]["phase"] = "Running";
    pod["metadata"]["annotations"]["AWS_NEURON_IDS"] = "0,1,2,3";
    api_.put("pods", pod);
  }
  ASSERT_TRUE(eventually([&] {
    return extender_->stderrText().find("held by another pod here") != std::string::npos;
  }));
  EXPECT_EQ(freeCores("trn-b"), "4-63");
  EXPECT_FALSE(allocationOf("ml/first").is_null());
  EXPECT_TRUE(allocationOf("ml/second").is_null());
  api_.remove("pods", "ml/first");
  EXPECT_TRUE(eventually([&] { return !allocationOf("ml/second").is_null(); }));
  EXPECT_EQ(freeCores("trn-b"), "4-63");
}

TEST_F(ExtenderApiTest, NodesFollowTheApi) {
  json nodes = state()["nodes"];
  ASSERT_EQ(nodes.size(), 2U);  // cpu-1 is not a Neuron node
  // The agent's topology annotation: LNC 1 and device 3 out of service.
  json node = *api_.get("nodes", "trn-b");
  node["metadata"]["annotations"]["torus.dev/topology"] =
      R"({"v":1,"instanceType":"trn2.48xlarge","lnc":1,"devices":16,"coresPerDevice":8,"unhealthy":[3]})";
  api_.put("nodes", node);
  ASSERT_TRUE(eventually([&] { return state()["nodes"][1]["lnc"] == 1; }));
  EXPECT_EQ(state()["nodes"][1]["unhealthyDevices"], "3");
  EXPECT_EQ(freeCores("trn-b"), "0-23,32-127");
  // A garbled annotation is reported and the catalog is used instead.
  node["metadata"]["annotations"]["torus.dev/topology"] = "{not json";
  api_.put("nodes", node);
  ASSERT_TRUE(eventually([&] { return state()["nodes"][1]["lnc"] == 2; }));
  EXPECT_NE(extender_->stderrText().find("annotation torus.dev/topology"), std::string::npos);
  api_.remove("nodes", "trn-b");
  EXPECT_TRUE(eventually([&] { return state()["nodes"].size() == 1U; }));
}

TEST(ExtenderApiStartup, NoClusterIsAClearError) {
  const ProcessResult result =
      runProcess({binaryPath("neuron-scheduler-extender"), "--kubeconfig=/nonexistent/kubeconfig",
                  "--listen=127.0.0.1:0"});
  EXPECT_EQ(result.exitCode, 2);
  EXPECT_NE(result.err.find("no cluster to serve"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("/nonexistent/kubeconfig"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace torus::testing
