#include "dra-driver/claim_preparer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/metrics/event_counters.h"
#include "tests/unit/dra/claim_preparer_fixture.h"

namespace torus::dra {
namespace {

using nlohmann::json;
using testing::claimObject;
using testing::ClaimPreparerTest;
using testing::FakeNode;

// The env entries of each device's CDI edit in a claim's spec, by device name.
std::map<std::string, std::vector<std::string>> envByDevice(const std::filesystem::path& spec) {
  std::map<std::string, std::vector<std::string>> env;
  const json parsed = json::parse(*readSmallFile(spec));
  for (const json& device : parsed["devices"]) {
    const std::string name = device["name"].get<std::string>();
    env[name.substr(name.rfind('-') + 1)] = device["containerEdits"]["env"];
  }
  return env;
}

// Two containers, each naming one request of a shared claim: each device's environment names the
// cores of that container's chip only, not the other's, whose /dev node it does not get.
TEST_F(ClaimPreparerTest, EachContainerSeesTheCoresOfTheRequestsItNames) {
  auto preparer = makePreparer();
  const ClaimRef ref{"uid-pair", "ns", "pair"};
  json claim = claimObject(ref, {"neurondevice4", "neurondevice5"});
  claim["metadata"]["namespace"] = "ns";
  claim["metadata"]["name"] = "pair";
  json& results = claim["status"]["allocation"]["devices"]["results"];
  results[0]["request"] = "first";
  results[1]["request"] = "second/one";  // a prioritized list's subrequest
  claim["status"]["reservedFor"] = json::array(
      {{{"resource", "pods"}, {"name", "trainer"}, {"uid", "pod-uid"}, {"apiGroup", ""}}});
  objects_["ns/pair"] = claim;
  pods_["ns/trainer"] = {
      {"metadata", {{"name", "trainer"}, {"uid", "pod-uid"}}},
      {"spec",
       {{"resourceClaims", json::array({{{"name", "chips"}, {"resourceClaimTemplateName", "t"}}})},
        {"containers",
         json::array(
             {{{"name", "a"},
               {"resources",
                {{"claims", json::array({{{"name", "chips"}, {"request", "first"}}})}}}},
              {{"name", "b"},
               {"resources",
                {{"claims", json::array({{{"name", "chips"}, {"request", "second"}}})}}}}})}}},
      {"status",
       {{"resourceClaimStatuses",
         json::array({{{"name", "chips"}, {"resourceClaimName", "pair"}}})}}}};
  auto prepared = prepare(*preparer, ref);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  auto env = envByDevice(cdiSpecPath(options_.cdiRoot, ref.uid));
  EXPECT_EQ(env["neurondevice4"][0], "NEURON_RT_VISIBLE_CORES=16-19");
  EXPECT_EQ(env["neurondevice5"][0], "NEURON_RT_VISIBLE_CORES=20-23");

  // A pod whose one container names the whole claim sees both chips' cores on either device.
  const ClaimRef whole{"uid-whole", "ns", "whole"};
  claim["metadata"]["uid"] = whole.uid;
  claim["metadata"]["name"] = "whole";
  results[0]["device"] = "neurondevice6";
  results[1]["device"] = "neurondevice7";
  claim["status"]["reservedFor"][0]["name"] = "single";
  objects_["ns/whole"] = claim;
  pods_["ns/single"] = {
      {"metadata", {{"name", "single"}, {"uid", "pod-uid"}}},
      {"spec",
       {{"resourceClaims", json::array({{{"name", "chips"}, {"resourceClaimName", "whole"}}})},
        {"containers",
         json::array({{{"name", "app"},
                       {"resources", {{"claims", json::array({{{"name", "chips"}}})}}}}})}}}};
  ASSERT_TRUE(prepare(*preparer, whole).ok());
  env = envByDevice(cdiSpecPath(options_.cdiRoot, whole.uid));
  EXPECT_EQ(env["neurondevice6"][0], "NEURON_RT_VISIBLE_CORES=24-31");
  EXPECT_EQ(env["neurondevice7"][0], "NEURON_RT_VISIBLE_CORES=24-31");
}

TEST_F(ClaimPreparerTest, PrepareIsIdempotentAndWritesTheSpec) {
  auto preparer = makePreparer();
  const ClaimRef ref = add("one", {"neurondevice0"});
  auto first = prepare(*preparer, ref);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].device, "neurondevice0");
  EXPECT_EQ((*first)[0].pool, "node-a");
  EXPECT_EQ((*first)[0].requests, std::vector<std::string>{"r"});
  EXPECT_TRUE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, ref.uid)));
  auto again = prepare(*preparer, ref);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].cdiIds, (*first)[0].cdiIds);
  // The retry is answered from memory, whatever the object says now.
  auto remembered = preparer->prepare(ref, claimObject(ref, {"neurondevice1"}));
  ASSERT_TRUE(remembered.ok());
  EXPECT_EQ((*remembered)[0].device, "neurondevice0");
}

TEST_F(ClaimPreparerTest, AChipIsNeverPreparedForTwoClaims) {
  auto preparer = makePreparer();
  ASSERT_TRUE(prepare(*preparer, add("chip", {"neurondevice3"})).ok());
  auto core = prepare(*preparer, add("core", {"neuroncore13"}));  // core 1 of chip 3
  ASSERT_FALSE(core.ok());
  EXPECT_NE(core.error().message.find("held by prepared claim ns/chip"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, "uid-core")));
  EXPECT_TRUE(prepare(*preparer, add("other", {"neuroncore16"})).ok());  // chip 4 is free
}

// adminAccess (a monitoring pod's claim) sees a chip without owning it: the scheduler allocates
// it beside a workload's claim on the same chip, both prepare in either order, and giving the
// admin claim back resets nothing under the workload.
TEST_F(ClaimPreparerTest, AnAdminAccessClaimSharesTheChipAndNeverResetsIt) {
  auto preparer = makePreparer();
  const auto admin = [&](const std::string& name, const std::string& device) {
    const ClaimRef ref = add(name, {device});
    objects_["ns/" + name]["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = true;
    return ref;
  };
  const ClaimRef monitor = admin("monitor", "neurondevice3");
  ASSERT_TRUE(prepare(*preparer, monitor).ok());
  const ClaimRef workload = add("workload", {"neurondevice3"});
  auto prepared = prepare(*preparer, workload);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  const ClaimRef later = admin("later", "neuroncore13");  // a core of the workload's chip
  ASSERT_TRUE(prepare(*preparer, later).ok());
  EXPECT_EQ(preparer->heldCores().toRangeString(), "12-15") << "only the workload owns cores";
  const auto spec = readSmallFile(cdiSpecPath(options_.cdiRoot, monitor.uid));
  ASSERT_TRUE(spec.ok());
  EXPECT_NE(spec->find("/dev/neuron3"), std::string::npos) << "the monitor gets the device node";
  EXPECT_NE(spec->find("NEURON_RT_VISIBLE_CORES=12-15"), std::string::npos) << *spec;
  ASSERT_TRUE(preparer->unprepare(monitor).ok());
  ASSERT_TRUE(preparer->unprepare(later).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_TRUE(node_.resets().empty()) << "an admin claim's end reset the workload's chip";
  ASSERT_TRUE(preparer->unprepare(workload).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(node_.resets(), std::vector<std::string>{"3"});
}

// A node neuron-ultraserver-operator reserved for a workload serves only claims made from that
// workload's template (they carry its annotation) in the workload's namespace; others are refused
// with its name, and until the reservations are read nothing is prepared at all.
TEST_F(ClaimPreparerTest, AReservedNodeServesOnlyItsWorkloadsClaims) {
  auto preparer = makePreparer();
  preparer->setReservation(false, "");
  const ClaimRef early = add("early", {"neurondevice0"});
  auto unknown = prepare(*preparer, early);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(unknown.error().message.find("has not read this node's UltraServer reservations"),
            std::string::npos);

  preparer->setReservation(true, "ml/train");
  auto stranger = prepare(*preparer, add("stranger", {"neurondevice1"}));
  ASSERT_FALSE(stranger.ok());
  EXPECT_EQ(stranger.error().message,
            "claim ns/stranger: node node-a is reserved for NeuronUltraServerWorkload ml/train; "
            "this claim belongs to no workload (claims made from a workload's "
            "ResourceClaimTemplate carry the annotation neuron.aws.com/workload)");
  const ClaimRef other = add("other", {"neurondevice1"});
  objects_["ns/other"]["metadata"]["annotations"]["neuron.aws.com/workload"] = "ml/serve";
  auto otherWorkload = prepare(*preparer, other);
  ASSERT_FALSE(otherWorkload.ok());
  EXPECT_NE(otherWorkload.error().message.find("this claim belongs to workload ml/serve"),
            std::string::npos);

  // The annotation is anyone's to write: a claim of another namespace that names the workload
  // is still a stranger's.
  const ClaimRef forged = add("forged", {"neurondevice2"});
  objects_["ns/forged"]["metadata"]["annotations"]["neuron.aws.com/workload"] = "ml/train";
  auto forgedPrepared = prepare(*preparer, forged);
  ASSERT_FALSE(forgedPrepared.ok());
  EXPECT_EQ(forgedPrepared.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(forgedPrepared.error().message.find(
                "this claim names workload ml/train but is in namespace ns; only claims of "
                "namespace ml may use its reservation"),
            std::string::npos)
      << forgedPrepared.error().message;

  // Its namespace and annotation, but written by hand: not made from the template for a pod.
  const ClaimRef byHand = add("by-hand", {"neurondevice2"}, "ml");
  objects_["ml/by-hand"]["metadata"]["annotations"]["neuron.aws.com/workload"] = "ml/train";
  auto byHandPrepared = prepare(*preparer, byHand);
  ASSERT_FALSE(byHandPrepared.ok());
  EXPECT_NE(byHandPrepared.error().message.find("was not made from its ResourceClaimTemplate"),
            std::string::npos)
      << byHandPrepared.error().message;

  // What the resource-claim controller makes from the workload's template for a pod.
  const ClaimRef own = add("own", {"neurondevice2"}, "ml");
  json& meta = objects_["ml/own"]["metadata"];
  meta["annotations"]["neuron.aws.com/workload"] = "ml/train";
  meta["annotations"]["resource.kubernetes.io/pod-claim-name"] = "neurons";
  meta["ownerReferences"] = json::array(
      {{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "train-0"}, {"controller", true}}});
  auto prepared = prepare(*preparer, own);
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;

  preparer->setReservation(true, "");  // released: anyone may use the node again
  EXPECT_TRUE(prepare(*preparer, add("later", {"neurondevice3"})).ok());
}

TEST_F(ClaimPreparerTest, UnprepareResetsFreesAndForgets) {
  auto preparer = makePreparer();
  const ClaimRef a = add("a", {"neuroncore0", "neuroncore1"});
  const ClaimRef b = add("b", {"neuroncore2"});
  ASSERT_TRUE(prepare(*preparer, a).ok());
  ASSERT_TRUE(prepare(*preparer, b).ok());
  ASSERT_TRUE(preparer->unprepare(a).ok());
  // Chip 0 still has b's core: not queued for a reset under it.
  EXPECT_TRUE(preparer->pendingResets().empty());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_TRUE(node_.resets().empty());
  ASSERT_TRUE(preparer->unprepare(b).ok());
  EXPECT_FALSE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, b.uid)));
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(node_.resets(), std::vector<std::string>{"0"});
  EXPECT_TRUE(preparer->unprepare(b).ok());  // kubelet retried: nothing to do
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(node_.resets().size(), 1u);
  EXPECT_TRUE(preparer->heldCores().empty());
}

// A core given back while its chip serves another claim cannot be reset (a reset wipes the whole
// chip): its next claim is told, once, and a later reset of the chip clears the record.
TEST_F(ClaimPreparerTest, ACoreHandedOnWithoutAResetIsCounted) {
  const auto counted = [] {
    return metrics::processCounters().value(metrics::names::kDraUnresetCoresTotal, {});
  };
  auto preparer = makePreparer();
  const ClaimRef a = add("a", {"neuroncore0", "neuroncore1"});
  const ClaimRef b = add("b", {"neuroncore2"});
  ASSERT_TRUE(prepare(*preparer, a).ok());
  ASSERT_TRUE(prepare(*preparer, b).ok());
  ASSERT_TRUE(preparer->unprepare(a).ok());
  const double before = counted();
  const ClaimRef c = add("c", {"neuroncore1", "neuroncore3"});
  ASSERT_TRUE(prepare(*preparer, c).ok());
  EXPECT_EQ(counted(), before + 1) << "core 1 was a's; core 3 was never held";
  // Given back together with the chip's last claim, the chip is reset: nothing left unreset.
  ASSERT_TRUE(preparer->unprepare(b).ok());
  ASSERT_TRUE(preparer->unprepare(c).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  const ClaimRef d = add("d", {"neuroncore0", "neuroncore1", "neuroncore2", "neuroncore3"});
  ASSERT_TRUE(prepare(*preparer, d).ok());
  EXPECT_EQ(counted(), before + 1);
}

// A claim the API no longer has (or has re-created under another UID) is one kubelet will never
// unprepare once its own state is lost: two sweeps in a row that miss it unprepare it, so its
// chip is reset and handed out again (audit L6). A claim still there stays.
TEST_F(ClaimPreparerTest, AClaimGoneFromTheApiIsForgottenOnTheSecondSweep) {
  auto preparer = makePreparer();
  const ClaimRef gone = add("gone", {"neurondevice3"});
  const ClaimRef recreated = add("recreated", {"neurondevice4"});
  const ClaimRef kept = add("kept", {"neurondevice5"});
  for (const ClaimRef& ref : {gone, recreated, kept})
    ASSERT_TRUE(prepare(*preparer, ref).ok());
  objects_.erase("ns/gone");
  objects_["ns/recreated"]["metadata"]["uid"] = "uid-new";
  EXPECT_EQ(preparer->forgetClaimsGoneFromApi(claims()), 0) << "one sweep is not enough";
  EXPECT_EQ(preparer->prepared().size(), 3U);
  EXPECT_EQ(preparer->forgetClaimsGoneFromApi(claims()), 2);
  EXPECT_EQ(preparer->prepared().size(), 1U);
  EXPECT_TRUE(preparer->prepared().contains(kept.uid));
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  const std::vector<std::string> resets = node_.resets();  // one batch or two
  EXPECT_TRUE(resets == std::vector<std::string>{"3-4"} ||
              resets == (std::vector<std::string>{"3", "4"}))
      << resets.size();
}

TEST_F(ClaimPreparerTest, ACorruptCheckpointStopsTheDriverAndSaysWhatToDo) {
  ASSERT_TRUE(writeFile(options_.checkpointFile, "{\"version\": 1, \"claims\": [").ok());
  auto preparer = ClaimPreparer::create(options_, node_);
  ASSERT_FALSE(preparer.ok());
  EXPECT_NE(preparer.error().message.find(options_.checkpointFile.string()), std::string::npos);
  EXPECT_NE(preparer.error().message.find("Drain the node (kubectl drain), delete " +
                                          options_.checkpointFile.string()),
            std::string::npos)
      << preparer.error().message;
}

// A prepare that must reset its chip first does it outside the lock: a slow reset (seconds on a
// real chip; kubelet gives a call 45 s) holds up no other claim's prepare (audit L3).
TEST_F(ClaimPreparerTest, ASlowResetInAPrepareHoldsUpNoOtherClaim) {
  auto preparer = makePreparer();
  const ClaimRef first = add("first", {"neurondevice0"});
  ASSERT_TRUE(prepare(*preparer, first).ok());
  node_.failResets = true;  // the worker's background reset fails: chip 0 stays pending
  ASSERT_TRUE(preparer->unprepare(first).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  node_.failResets = false;
  node_.holdResets();
  const int before = node_.resetsStarted();
  const ClaimRef again = add("again", {"neurondevice0"});
  auto slow = std::async(std::launch::async, [&] { return prepare(*preparer, again); });
  node_.waitForResetsStarted(before + 1);  // its reset of chip 0 has begun, and is held
  const ClaimRef other = add("other", {"neurondevice1"});
  auto quick = std::async(std::launch::async, [&] { return prepare(*preparer, other); });
  // Bounded only so that a regression fails instead of hanging; nothing here is timed.
  const bool otherDone = quick.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  node_.releaseResets();
  EXPECT_TRUE(otherDone) << "chip 1's prepare waited for chip 0's reset";
  EXPECT_TRUE(quick.get().ok());
  auto prepared = slow.get();
  ASSERT_TRUE(prepared.ok()) << prepared.error().message;
  EXPECT_TRUE(preparer->prepared().contains(again.uid));
  EXPECT_TRUE(preparer->pendingResets().empty());
}

// A chip whose reset failed is never handed out: the worker leaves it pending, a prepare that
// wants it tries the reset again and fails with the reason while it fails (kubelet retries), and
// the first reset that succeeds lets the claim through.
TEST_F(ClaimPreparerTest, AChipWhoseResetFailsIsNotHandedOut) {
  auto preparer = makePreparer();
  const ClaimRef first = add("first", {"neurondevice0"});
  ASSERT_TRUE(prepare(*preparer, first).ok());
  node_.failResets = true;
  ASSERT_TRUE(preparer->unprepare(first).ok());
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(preparer->pendingResets().toRangeString(), "0") << "a failed reset leaves it pending";
  const ClaimRef next = add("next", {"neurondevice0"});
  auto refused = prepare(*preparer, next);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("chips 0 were given back by their last claim and "
                                         "resetting them failed"),
            std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, next.uid)));
  EXPECT_TRUE(preparer->heldCores().empty());
  node_.failResets = false;
  ASSERT_TRUE(prepare(*preparer, next).ok());
  EXPECT_EQ(node_.resets(), std::vector<std::string>{"0"});
  EXPECT_TRUE(preparer->pendingResets().empty());
}

TEST_F(ClaimPreparerTest, ARestartedDriverKnowsWhatIsPrepared) {
  const ClaimRef ref = add("kept", {"neurondevice5"});
  {
    auto preparer = makePreparer();
    ASSERT_TRUE(prepare(*preparer, ref).ok());
  }
  // A spec left by a crash between writing it and recording the claim is cleaned up.
  ASSERT_TRUE(writeCdiSpec(options_.cdiRoot, "uid-orphan", json::object()).ok());
  auto restarted = makePreparer();
  EXPECT_EQ(restarted->heldCores().toRangeString(), "20-23");
  EXPECT_FALSE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, "uid-orphan")));
  EXPECT_TRUE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, ref.uid)));
  auto again = restarted->prepare(ref, claimObject(ref, {"neurondevice6"}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].device, "neurondevice5");  // not prepared twice
  EXPECT_FALSE(prepare(*restarted, add("clash", {"neurondevice5"})).ok());
  ASSERT_TRUE(restarted->unprepare(ref).ok());
  EXPECT_TRUE(makePreparer()->heldCores().empty());
}

TEST_F(ClaimPreparerTest, ResetsPendingAtAStopAreDoneAtTheNextStart) {
  DriverState state;
  state.pendingReset.insert(3);
  state.pendingReset.insert(9);
  ASSERT_TRUE(saveCheckpoint(options_.checkpointFile, state).ok());
  auto preparer = makePreparer();
  ASSERT_TRUE(preparer->waitForResets(std::chrono::seconds(5)));
  EXPECT_EQ(node_.resets(), std::vector<std::string>{"3,9"});
  auto reloaded = loadCheckpoint(options_.checkpointFile);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_TRUE(reloaded->pendingReset.empty());  // done, and recorded as done
}

TEST_F(ClaimPreparerTest, AfterARebootTheSpecsComeBackFromTheCheckpoint) {
  const ClaimRef ref = add("kept", {"neurondevice2"});
  ASSERT_TRUE(prepare(*makePreparer(), ref).ok());
  std::filesystem::remove_all(options_.cdiRoot);  // /var/run is a tmpfs
  auto restarted = makePreparer();
  EXPECT_TRUE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, ref.uid)));
  std::filesystem::remove(cdiSpecPath(options_.cdiRoot, ref.uid));
  ASSERT_TRUE(prepare(*restarted, ref).ok());  // kubelet prepares again after the reboot
  EXPECT_TRUE(std::filesystem::exists(cdiSpecPath(options_.cdiRoot, ref.uid)));
}

TEST_F(ClaimPreparerTest, AnApiErrorIsTheClaimsErrorOnly) {
  auto preparer = makePreparer();
  auto missing = prepare(*preparer, {"uid-x", "ns", "missing"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("reading claim ns/missing"), std::string::npos);
  EXPECT_TRUE(prepare(*preparer, add("fine", {"neurondevice1"})).ok());
}

}  // namespace
}  // namespace torus::dra
