#include "dra-driver/ultraserver_reservation.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::dra {
namespace {

// The reservation decision alone: a claim may have a reserved node's chips only when it names the
// workload and is in the workload's own namespace; a node reserved for no one refuses no claim.
TEST(ReservationRefusal, OnlyTheWorkloadsOwnClaimsOfItsNamespace) {
  EXPECT_EQ(reservationRefusal("", "", "ml", "c", "node-a", true), "");
  EXPECT_EQ(reservationRefusal("", "ml/other", "ml", "c", "node-a", true), "");
  EXPECT_EQ(reservationRefusal("ml/train", "ml/train", "ml", "c", "node-a", true), "");
  EXPECT_EQ(reservationRefusal("ml/train", "", "ml", "c", "node-a", true),
            "claim ml/c: node node-a is reserved for NeuronUltraServerWorkload ml/train; this "
            "claim belongs to no workload (claims made from a workload's ResourceClaimTemplate "
            "carry the annotation neuron.aws.com/workload)");
  EXPECT_NE(reservationRefusal("ml/train", "ml/other", "ml", "c", "node-a", true)
                .find("this claim belongs to workload ml/other"),
            std::string::npos);
  // A forged annotation from another namespace.
  EXPECT_EQ(reservationRefusal("ml/train", "ml/train", "guest", "c", "node-a", true),
            "claim guest/c: node node-a is reserved for NeuronUltraServerWorkload ml/train; this "
            "claim names workload ml/train but is in namespace guest; only claims of namespace ml "
            "may use its reservation");
  // The right namespace and annotation on a claim written by hand (where the admission policy
  // that keeps the annotation to the claim controller is not served).
  EXPECT_NE(reservationRefusal("ml/train", "ml/train", "ml", "c", "node-a", false)
                .find("was not made from its ResourceClaimTemplate for a pod"),
            std::string::npos);
}

// A claim the resource-claim controller made for a pod: the Pod controls it and it carries the
// pod-claim-name annotation; one missing either is not.
TEST(UltraServerReservation, AClaimFromATemplateIsOwnedByItsPod) {
  nlohmann::json claim = {{"metadata",
                           {{"annotations", {{"resource.kubernetes.io/pod-claim-name", "neurons"}}},
                            {"ownerReferences", nlohmann::json::array({{{"apiVersion", "v1"},
                                                                        {"kind", "Pod"},
                                                                        {"name", "train-0"},
                                                                        {"uid", "u1"},
                                                                        {"controller", true}}})}}}};
  EXPECT_TRUE(madeFromTemplateForPod(claim));
  nlohmann::json byHand = claim;
  byHand["metadata"]["ownerReferences"][0]["controller"] = false;
  EXPECT_FALSE(madeFromTemplateForPod(byHand));
  byHand = claim;
  byHand["metadata"].erase("annotations");
  EXPECT_FALSE(madeFromTemplateForPod(byHand));
  byHand = claim;
  byHand["metadata"]["ownerReferences"][0]["kind"] = "ConfigMap";
  EXPECT_FALSE(madeFromTemplateForPod(byHand));
}

}  // namespace
}  // namespace torus::dra
