// Reading claims (allocation, opaque configs), CDI specs and the checkpoint.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "dra-driver/cdi.h"
#include "dra-driver/checkpoint.h"
#include "dra-driver/claim_allocation.h"
#include "dra-driver/claim_holders.h"

namespace torus::dra {
namespace {

using nlohmann::json;

const ClaimRef kRef{"0f6c1a2e-1111-4222-8333-444455556666", "team-a", "train"};

// configs is a vector, not a json: a json brace-initialised from one json is an array under g++
// and a copy under clang (nlohmann's FAQ), and the claim must hold a list either way.
json claimWith(const std::vector<std::string>& devices, const std::vector<json>& configs = {},
               const std::string& pool = "node-a") {
  json results = json::array();
  for (const std::string& device : devices) {
    results.push_back(
        {{"request", "chips"}, {"driver", "neuron.aws.com"}, {"pool", pool}, {"device", device}});
  }
  // A device of another driver in the same claim (an EFA interface) is not ours to prepare.
  results.push_back({{"request", "efa"},
                     {"driver", "efa.networking.k8s.aws"},
                     {"pool", pool},
                     {"device", "efa0"}});
  return {{"metadata", {{"name", kRef.name}, {"namespace", kRef.nameSpace}, {"uid", kRef.uid}}},
          {"status",
           {{"allocation", {{"devices", {{"results", results}, {"config", json(configs)}}}}}}}};
}

json neuronConfig(json parameters, const char* source = "FromClaim", json requests = json()) {
  json config = {{"source", source},
                 {"opaque", {{"driver", "neuron.aws.com"}, {"parameters", parameters}}}};
  if (!requests.is_null()) config["requests"] = requests;
  return config;
}

topology::Node trn2() {
  return *topology::catalogNode("trn2.48xlarge");
}

TEST(ClaimAllocation, ChipsResolveToTheirCores) {
  auto claim = resolveClaim(claimWith({"neurondevice4", "neurondevice5"}), kRef, "node-a", trn2());
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->devices.size(), 2u);  // the EFA device is not ours
  EXPECT_EQ(claim->chips.toRangeString(), "4-5");
  EXPECT_EQ(claim->cores.toRangeString(), "16-23");
  EXPECT_TRUE(claim->wholeChips);
  EXPECT_EQ(claim->lnc, 2);
  const std::vector<std::string> env = claimEnvironment(*claim, trn2());
  EXPECT_EQ(env, (std::vector<std::string>{"NEURON_RT_VISIBLE_CORES=16-23",
                                           "NEURON_LOGICAL_NC_CONFIG=2"}));
}

TEST(ClaimAllocation, CoresOfOneChip) {
  auto claim =
      resolveClaim(claimWith({"neuroncore8", "neuroncore9", "neuroncore10", "neuroncore11"}), kRef,
                   "node-a", trn2());
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_FALSE(claim->wholeChips);
  EXPECT_EQ(claim->chips.toRangeString(), "2");
  EXPECT_EQ(claimEnvironment(*claim, trn2())[0], "NEURON_RT_VISIBLE_CORES=8-11");
}

TEST(ClaimAllocation, NeuronConfigLnc1RenumbersTheChipsCores) {
  auto claim =
      resolveClaim(claimWith({"neurondevice1"}, {neuronConfig({{"apiVersion", "neuron.aws.com/v1"},
                                                               {"kind", "NeuronConfig"},
                                                               {"logicalNeuronCore", 1}})}),
                   kRef, "node-a", trn2());
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->lnc, 1);
  EXPECT_EQ(claim->cores.toRangeString(), "4-7");  // held, in the node's LNC 2 numbering
  EXPECT_EQ(
      claimEnvironment(*claim, trn2()),
      (std::vector<std::string>{"NEURON_RT_VISIBLE_CORES=8-15", "NEURON_LOGICAL_NC_CONFIG=1"}));
}

TEST(ClaimAllocation, ClaimConfigOverridesClassConfig) {
  const json lnc1 = {
      {"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCore", 1}};
  const json lnc2 = {
      {"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCore", 2}};
  // Listed claim-first, applied class-first.
  auto claim = resolveClaim(claimWith({"neurondevice0"}, {neuronConfig(lnc1, "FromClaim"),
                                                          neuronConfig(lnc2, "FromClass")}),
                            kRef, "node-a", trn2());
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->lnc, 1);
  // A config for another request does not apply.
  auto other = resolveClaim(
      claimWith({"neurondevice0"}, {neuronConfig(lnc1, "FromClaim", json::array({"efa"}))}), kRef,
      "node-a", trn2());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->lnc, 2);
}

TEST(ClaimAllocation, BadConfigsNameTheField) {
  struct Case {
    json parameters;
    std::string mentions;
  };
  const std::vector<Case> cases = {
      {{{"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCore", 3}},
       "NeuronConfig.logicalNeuronCore is 3"},
      {{{"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCore", "2"}},
       "must be an integer"},
      {{{"apiVersion", "neuron.aws.com/v1"}, {"kind", "GpuConfig"}}, "kind \"GpuConfig\""},
      {{{"apiVersion", "neuron.aws.com/v2"}, {"kind", "NeuronConfig"}}, "apiVersion"},
      {{{"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCores", 1}},
       "no field \"logicalNeuronCores\""},
      {{{"apiVersion", "neuron.aws.com/v1"}, {"kind", "UltraServerConfig"}, {"ultraserverMode", 3}},
       "ultraserverMode is 3"},
      {json::array({1}), "must be an object"},
  };
  for (const Case& c : cases) {
    auto claim = resolveClaim(claimWith({"neurondevice0"}, {neuronConfig(c.parameters)}), kRef,
                              "node-a", trn2());
    ASSERT_FALSE(claim.ok()) << c.parameters.dump();
    EXPECT_NE(claim.error().message.find(c.mentions), std::string::npos) << claim.error().message;
    EXPECT_NE(claim.error().message.find("team-a/train"), std::string::npos);
  }
}

// A size the node's UltraServer election did not form is refused, naming the modes it did.
TEST(ClaimAllocation, UltraServerSizeMustBeOneTheDriverOffers) {
  topology::Node node = *topology::catalogNode("trn2u.48xlarge");
  node.ultraServer = topology::UltraServerPosition{0, 2, "aa", "bb", {2, 4}};  // a 2-node election
  const auto asking = [&](int nodes) {
    return resolveClaim(
        claimWith({"neurondevice0"}, {neuronConfig({{"apiVersion", "neuron.aws.com/v1"},
                                                    {"kind", "UltraServerConfig"},
                                                    {"ultraserverMode", nodes}})}),
        kRef, "node-a", node);
  };
  auto four = asking(4);
  ASSERT_FALSE(four.ok());
  EXPECT_EQ(four.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(four.error().message.find("ultraserverMode 4 is not offered"), std::string::npos)
      << four.error().message;
  EXPECT_NE(four.error().message.find("driver modes 2,4"), std::string::npos);
  auto two = asking(2);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->ultraServerMode, 2);
  EXPECT_TRUE(asking(1).ok());
}

TEST(ClaimAllocation, RefusesWhatIsNotOursToPrepare) {
  EXPECT_EQ(
      resolveClaim(claimWith({"neurondevice0"}, {}, "node-b"), kRef, "node-a", trn2()).error().code,
      ErrorCode::kFailedPrecondition);
  EXPECT_NE(resolveClaim(claimWith({"neurondevice16"}), kRef, "node-a", trn2())
                .error()
                .message.find("not one this node publishes"),
            std::string::npos);
  ClaimRef otherUid = kRef;
  otherUid.uid = "another";
  EXPECT_EQ(checkAllocatedClaim(claimWith({"neurondevice0"}), otherUid).error().code,
            ErrorCode::kNotFound);
  EXPECT_TRUE(checkAllocatedClaim(claimWith({"neurondevice0"}), kRef).ok());
  json unallocated = claimWith({"neurondevice0"});
  unallocated.erase("status");
  EXPECT_NE(resolveClaim(unallocated, kRef, "node-a", trn2()).error().message.find("not allocated"),
            std::string::npos);
  EXPECT_EQ(checkAllocatedClaim(unallocated, kRef).error().code, ErrorCode::kFailedPrecondition);
  // LNC 1 cannot apply to single cores numbered at LNC 2.
  auto cores =
      resolveClaim(claimWith({"neuroncore0"}, {neuronConfig({{"apiVersion", "neuron.aws.com/v1"},
                                                             {"kind", "NeuronConfig"},
                                                             {"logicalNeuronCore", 1}})}),
                   kRef, "node-a", trn2());
  EXPECT_NE(cores.error().message.find("whole chips only"), std::string::npos);
  // Hostile shapes never throw.
  for (const json& bad :
       {json(nullptr), json::array(), json{{"metadata", 5}},
        json{{"metadata", {{"uid", kRef.uid}}}, {"status", {{"allocation", 1}}}}}) {
    EXPECT_FALSE(resolveClaim(bad, kRef, "node-a", trn2()).ok()) << bad.dump();
  }
}

// A claim of two requests, "a" on chip 4 and "b" on chip 5.
json twoRequestClaim(const std::vector<json>& configs = {}) {
  json claim = claimWith({"neurondevice4", "neurondevice5"}, configs);
  claim["status"]["allocation"]["devices"]["results"][0]["request"] = "a";
  claim["status"]["allocation"]["devices"]["results"][1]["request"] = "b";
  return claim;
}

json lnc1() {
  return {{"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"logicalNeuronCore", 1}};
}

TEST(ClaimAllocation, AConfigNamingOneRequestAppliesToThatRequestOnly) {
  // LNC 1 for "a" only leaves "b" at the node's LNC 2: one claim cannot run both.
  auto mixed = resolveClaim(twoRequestClaim({neuronConfig(lnc1(), "FromClaim", {"a"})}), kRef,
                            "node-a", trn2());
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("claim team-a/train: its requests are configured "
                                       "differently (request \"a\": LNC 1; request \"b\": LNC 2 "
                                       "(the node's))"),
            std::string::npos)
      << mixed.error().message;
  // Named for both, it applies to both.
  auto both = resolveClaim(twoRequestClaim({neuronConfig(lnc1(), "FromClaim", {"a", "b"})}), kRef,
                           "node-a", trn2());
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->lnc, 1);
  EXPECT_EQ(claimEnvironment(*both, trn2())[0], "NEURON_RT_VISIBLE_CORES=32-47");
}

TEST(ClaimAllocation, EachDeviceShowsTheCoresOfWhatItsContainersGet) {
  // No views: every device shows the whole claim, as a container naming the claim sees it.
  auto whole = resolveClaim(twoRequestClaim(), kRef, "node-a", trn2());
  ASSERT_TRUE(whole.ok());
  for (const AllocatedDevice& device : whole->devices)
    EXPECT_EQ(device.visibleCores, whole->visibleCores) << device.name;
  // One container per request: each device shows its own chip's cores.
  auto split =
      resolveClaim(twoRequestClaim(), kRef, "node-a", trn2(), {{"p/x", {"a"}}, {"p/y", {"b"}}});
  ASSERT_TRUE(split.ok()) << split.error().message;
  EXPECT_EQ(topology::CoreSet::fromIds(split->devices[0].visibleCores).toRangeString(), "16-19");
  EXPECT_EQ(topology::CoreSet::fromIds(split->devices[1].visibleCores).toRangeString(), "20-23");
  EXPECT_EQ(deviceEnvironment(*split, split->devices[1], trn2())[0],
            "NEURON_RT_VISIBLE_CORES=20-23");
  // A container naming both requests and another naming them too: the same set, both chips.
  auto together =
      resolveClaim(twoRequestClaim(), kRef, "node-a", trn2(), {{"p/x", {"a", "b"}}, {"p/y", {}}});
  ASSERT_TRUE(together.ok()) << together.error().message;
  EXPECT_EQ(topology::CoreSet::fromIds(together->devices[0].visibleCores).toRangeString(), "16-23");
  // One container gets chip 4 alone, another chip 4 with chip 5: no single value is right.
  auto overlapping =
      resolveClaim(twoRequestClaim(), kRef, "node-a", trn2(), {{"p/x", {"a"}}, {"p/y", {}}});
  ASSERT_FALSE(overlapping.ok());
  EXPECT_NE(overlapping.error().message.find(
                "containers p/x (requests a) and p/y (the whole claim) both get device "
                "neurondevice4 but with different other devices"),
            std::string::npos)
      << overlapping.error().message;
}

TEST(ClaimAllocation, ClaimViewsReadTheContainersThatUseTheClaim) {
  const json pod = {
      {"metadata", {{"name", "job-0"}}},
      {"spec",
       {{"resourceClaims",
         json::array({{{"name", "direct"}, {"resourceClaimName", "shared"}},
                      {{"name", "made"}, {"resourceClaimTemplateName", "tmpl"}}})},
        {"initContainers",
         json::array({{{"name", "warmup"},
                       {"resources", {{"claims", json::array({{{"name", "made"}}})}}}}})},
        {"containers",
         json::array({{{"name", "main"},
                       {"resources",
                        {{"claims", json::array({{{"name", "made"}, {"request", "a"}},
                                                 {{"name", "made"}, {"request", "b"}},
                                                 {{"name", "direct"}}})}}}},
                      {{"name", "sidecar"}, {"resources", "not an object"}},
                      {{"name", "other"},
                       {"resources", {{"claims", json::array({{{"name", "direct"}}})}}}}})}}},
      {"status",
       {{"resourceClaimStatuses",
         json::array({{{"name", "made"}, {"resourceClaimName", "job-0-made-x7k2p"}}})}}}};
  const std::vector<ContainerView> made = claimViews(pod, "job-0-made-x7k2p");
  ASSERT_EQ(made.size(), 2u);
  EXPECT_EQ(made[0].container, "job-0/warmup");
  EXPECT_TRUE(made[0].requests.empty());
  EXPECT_EQ(made[1].container, "job-0/main");
  EXPECT_EQ(made[1].requests, (std::vector<std::string>{"a", "b"}));
  const std::vector<ContainerView> shared = claimViews(pod, "shared");
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[1].container, "job-0/other");
  EXPECT_TRUE(claimViews(pod, "unrelated").empty());
  EXPECT_TRUE(claimViews(json("not a pod"), "shared").empty());
}

TEST(CdiSpec, EveryDeviceGetsItsNodesAndTheClaimsEnvironment) {
  auto claim = resolveClaim(claimWith({"neurondevice2", "neurondevice3"}), kRef, "node-a", trn2());
  ASSERT_TRUE(claim.ok());
  const json spec = cdiSpec(*claim, trn2(), "/host/dev");
  EXPECT_EQ(spec["kind"], "neuron.aws.com/device");
  ASSERT_EQ(spec["devices"].size(), 2u);
  const json& first = spec["devices"][0];
  EXPECT_EQ(first["name"], kRef.uid + "-neurondevice2");
  EXPECT_EQ(first["containerEdits"]["deviceNodes"][0]["path"], "/dev/neuron2");
  EXPECT_EQ(first["containerEdits"]["deviceNodes"][0]["hostPath"], "/host/dev/neuron2");
  EXPECT_EQ(first["containerEdits"]["env"][0], "NEURON_RT_VISIBLE_CORES=8-15");
  const auto ids = cdiDeviceIds(*claim);
  EXPECT_EQ(ids[1].ids[0], "neuron.aws.com/device=" + kRef.uid + "-neurondevice3");

  auto dir = TempDir::create("cdi");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(writeCdiSpec(dir->path(), kRef.uid, spec).ok());
  auto text = readSmallFile(cdiSpecPath(dir->path(), kRef.uid));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(json::parse(*text), spec);
  EXPECT_TRUE(removeCdiSpec(dir->path(), kRef.uid).ok());
  EXPECT_TRUE(removeCdiSpec(dir->path(), kRef.uid).ok());  // idempotent
  EXPECT_FALSE(std::filesystem::exists(cdiSpecPath(dir->path(), kRef.uid)));
}

TEST(Checkpoint, RoundTripsEveryField) {
  auto dir = TempDir::create("checkpoint");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "checkpoint.json";
  EXPECT_TRUE(loadCheckpoint(file)->claims.empty());  // first start
  auto claim =
      resolveClaim(claimWith({"neurondevice1"}, {neuronConfig({{"apiVersion", "neuron.aws.com/v1"},
                                                               {"kind", "NeuronConfig"},
                                                               {"logicalNeuronCore", 1}})}),
                   kRef, "node-a", trn2());
  ASSERT_TRUE(claim.ok());
  DriverState state;
  state.claims.emplace(kRef.uid, *claim);
  state.pendingReset.insert(7);
  ASSERT_TRUE(saveCheckpoint(file, state).ok());
  auto loaded = loadCheckpoint(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->claims.size(), 1u);
  EXPECT_EQ(loaded->pendingReset.toRangeString(), "7");
  const ResolvedClaim& back = loaded->claims.at(kRef.uid);
  EXPECT_EQ(back.ref.nameSpace, "team-a");
  EXPECT_EQ(back.ref.name, "train");
  EXPECT_EQ(back.pool, "node-a");
  EXPECT_EQ(back.chips.toRangeString(), claim->chips.toRangeString());
  EXPECT_EQ(back.cores.toRangeString(), claim->cores.toRangeString());
  EXPECT_EQ(back.visibleCores, claim->visibleCores);
  EXPECT_EQ(back.lnc, 1);
  EXPECT_EQ(back.devices[0].name, "neurondevice1");
  EXPECT_EQ(back.devices[0].requests, std::vector<std::string>{"chips"});
  EXPECT_EQ(back.devices[0].visibleCores, claim->devices[0].visibleCores);
}

// Version 1, as the driver at c200113 wrote it (its toJson and saveCheckpoint, one claim of two
// chips and a chip awaiting its reset): read, and converted forward — each device shows the
// whole claim's cores, as that driver's CDI specs did, and no core is recorded as unreset.
TEST(Checkpoint, ACheckpointWrittenByTheDriverOfC200113IsReadAndConvertedForward) {
  const std::string text = R"({
 "claims": {
  "u1": {
   "chips": [4, 5],
   "cores": [16, 17, 18, 19, 20, 21, 22, 23],
   "devices": [{"name": "neurondevice4", "requests": ["a"]},
               {"name": "neurondevice5", "requests": ["b"]}],
   "lnc": 2,
   "name": "c",
   "namespace": "ns",
   "pool": "node-a",
   "visibleCores": [16, 17, 18, 19, 20, 21, 22, 23],
   "wholeChips": true
  }
 },
 "pendingReset": [7],
 "version": 1
}
)";
  auto loaded = parseCheckpoint(text, "test");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->pendingReset.toRangeString(), "7");
  EXPECT_TRUE(loaded->unresetCores.empty());
  for (const AllocatedDevice& device : loaded->claims.at("u1").devices) {
    EXPECT_EQ(device.visibleCores, (std::vector<int>{16, 17, 18, 19, 20, 21, 22, 23}));
  }
  // Written again, it is version 2 with a checksum, and reads back the same.
  auto dir = TempDir::create("checkpoint");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "checkpoint.json";
  ASSERT_TRUE(saveCheckpoint(file, *loaded).ok());
  const json written = json::parse(*readSmallFile(file));
  EXPECT_EQ(written["version"], 2);
  EXPECT_TRUE(written["checksum"].get<std::string>().starts_with("fnv1a64:"));
  auto again = loadCheckpoint(file);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->claims.at("u1").chips.toRangeString(), "4-5");
}

// A damaged file (one digit changed) is refused by its checksum, not read as other chips.
TEST(Checkpoint, AFileWhoseChecksumDoesNotMatchIsRefused) {
  auto dir = TempDir::create("checkpoint");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "checkpoint.json";
  DriverState state;
  state.pendingReset.insert(3);
  ASSERT_TRUE(saveCheckpoint(file, state).ok());
  std::string text = *readSmallFile(file);
  const std::size_t three = text.find("3", text.find("pendingReset"));
  ASSERT_NE(three, std::string::npos);
  text[three] = '9';
  ASSERT_TRUE(writeFile(file, text).ok());
  auto damaged = loadCheckpoint(file);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message.find("checksum does not match"), std::string::npos)
      << damaged.error().message;
  ASSERT_TRUE(writeFile(file, R"({"version": 3, "checksum": "x", "data": {}})").ok());
  auto newer = loadCheckpoint(file);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("is not one this driver reads"), std::string::npos);
}

TEST(Checkpoint, ACorruptFileIsAnErrorNotAnEmptySet) {
  auto dir = TempDir::create("checkpoint");
  ASSERT_TRUE(dir.ok());
  const auto file = dir->path() / "checkpoint.json";
  for (const char* text : {"{", "[]", R"({"version":"1","claims":{}})", R"({"version":2})",
                           R"({"version":1,"claims":{"u":{"namespace":"a"}}})",
                           R"({"version":1,"claims":{"u":{"namespace":"a","name":"b","pool":"p",
                              "wholeChips":true,"lnc":1,"visibleCores":[],"chips":[9999],
                              "cores":[],"devices":[]}}})",
                           R"({"version":1,"claims":{"u":{"namespace":"a","name":"b","pool":"p",
                              "wholeChips":true,"lnc":1e39,"visibleCores":[],"chips":[],
                              "cores":[],"devices":[]}}})"}) {
    ASSERT_TRUE(writeFile(file, text).ok());
    auto loaded = loadCheckpoint(file);
    EXPECT_FALSE(loaded.ok()) << text;
    if (!loaded.ok()) {
      EXPECT_NE(loaded.error().message.find("checkpoint"), std::string::npos);
    }
  }
}

TEST(ClaimHolders, OnlyContainersWhoseClaimHasOurDevicesInOurPool) {
  const std::vector<kubelet::ContainerClaim> rows = {
      {"ml", "train", "main", "ml", "chips", {{"neuron.aws.com", "node-a", "neuron-0"}}},
      {"ml", "train", "side", "ml", "gpus", {{"gpu.nvidia.com", "node-a", "gpu-0"}}},
      {"ml", "moved", "main", "ml", "old", {{"neuron.aws.com", "node-b", "neuron-3"}}},
      {"ml",
       "mixed",
       "main",
       "ml",
       "both",
       {{"gpu.nvidia.com", "node-a", "gpu-1"}, {"neuron.aws.com", "node-a", "neuron-1"}}},
  };
  const std::vector<ClaimHolder> holders = claimHoldersOf(rows, "neuron.aws.com", "node-a");
  ASSERT_EQ(holders.size(), 2U);
  EXPECT_EQ(holders[0], (ClaimHolder{"ml", "chips", "ml", "train", "main"}));
  EXPECT_EQ(holders[1], (ClaimHolder{"ml", "both", "ml", "mixed", "main"}));
}

}  // namespace
}  // namespace torus::dra
