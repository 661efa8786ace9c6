// The NeuronUltraServer allocations: what the operator records is what it and the DRA driver
// read back, and the workload states spell AWS's enum.
#include "common/contracts/neuron_ultraserver.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dra-driver/ultraserver_reservation.h"

namespace torus::contracts {
namespace {

using nlohmann::json;

Allocation allocation(const std::string& ref, std::vector<std::string> nodes, const char* phase,
                      int index) {
  Allocation each;
  each.workloadRef = ref;
  each.ultraServer = "us-ab0";
  each.ultraServerIndex = index;
  each.nodes = std::move(nodes);
  each.phase = phase;
  each.allocatedAt = "2026-11-27T10:00:00Z";
  return each;
}

json ultraServerWith(const std::vector<Allocation>& allocations) {
  json entries = json::array();
  for (const Allocation& each : allocations)
    entries.push_back(allocationEntry(each));
  return {{"apiVersion", kUltraServerApiVersion},
          {"kind", kUltraServerKind},
          {"metadata", {{"name", "us-ab0"}}},
          {"status", {{"allocations", entries}}}};
}

TEST(NeuronUltraServer, RecordedAllocationsReadBackTheSame) {
  const std::vector<Allocation> written = {
      allocation("ml/train", {"n0", "n1"}, kAllocationBound, 0),
      allocation("ml/serve", {"n3"}, kAllocationPending, 1)};
  EXPECT_EQ(allocationsOf(ultraServerWith(written)), written);
}

TEST(NeuronUltraServer, AnEntryCarriesAwsFieldsLeaderFirst) {
  const json entry = allocationEntry(allocation("ml/train", {"n2", "n3"}, kAllocationBound, 1));
  EXPECT_EQ(entry["leaderNodeName"], "n2");
  EXPECT_EQ(entry["nodeCount"], 2);
  EXPECT_EQ(entry["ultraserverIndex"], 1);
  EXPECT_EQ(entry["phase"], "Bound");
}

TEST(NeuronUltraServer, EntriesWithoutAWorkloadOrNodesAreSkipped) {
  json object = ultraServerWith({allocation("ml/train", {"n0"}, kAllocationBound, 0)});
  object["status"]["allocations"].push_back({{"allocatedNodes", json::array({"n1"})}});
  object["status"]["allocations"].push_back({{"workloadRef", "ml/x"}});
  object["status"]["allocations"].push_back("not an entry");
  EXPECT_EQ(allocationsOf(object).size(), 1u);
  EXPECT_TRUE(allocationsOf(json::object()).empty());
}

// The driver's reading: a node is reserved by an allocation that names it, Pending or Bound.
TEST(NeuronUltraServer, TheDriverSeesTheAllocationsOfItsNodeAndWhetherBound) {
  const json object = ultraServerWith({allocation("ml/train", {"n0", "n1"}, kAllocationBound, 0),
                                       allocation("ml/serve", {"n3"}, kAllocationPending, 1)});
  EXPECT_EQ(dra::reservationOf(object, "n1"), (dra::NodeReservation{"ml/train", true}));
  EXPECT_EQ(dra::reservationOf(object, "n3"), (dra::NodeReservation{"ml/serve", false}))
      << "Pending: reserved, not yet the workload's to use";
  EXPECT_EQ(dra::reservationOf(object, "n2"), dra::NodeReservation{});
}

TEST(NeuronUltraServer, WorkloadStatesAreAwsNames) {
  const std::pair<WorkloadState, const char*> names[] = {
      {WorkloadState::kPending, "Pending"},
      {WorkloadState::kAllocating, "Allocating"},
      {WorkloadState::kAllocated, "Allocated"},
      {WorkloadState::kPartiallyAllocated, "PartiallyAllocated"},
      {WorkloadState::kFailed, "Failed"},
      {WorkloadState::kDeallocating, "Deallocating"}};
  for (const auto& [state, name] : names)
    EXPECT_STREQ(workloadStateName(state), name);
}

TEST(NeuronUltraServer, PathsNameTheServedVersion) {
  EXPECT_EQ(ultraServersPath("neuron"),
            "/apis/neuron.aws.com/v1beta1/namespaces/neuron/neuronultraservers");
  EXPECT_EQ(workloadsPath(), "/apis/neuron.aws.com/v1beta1/neuronultraserverworkloads");
  EXPECT_EQ(workloadPath("ml", "train"),
            "/apis/neuron.aws.com/v1beta1/namespaces/ml/neuronultraserverworkloads/train");
}

}  // namespace
}  // namespace torus::contracts
