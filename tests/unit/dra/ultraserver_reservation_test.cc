#include "dra-driver/ultraserver_reservation.h"

#include <gtest/gtest.h>

namespace torus::dra {
namespace {

// The reservation decision alone: a claim may have a reserved node's chips only when it names the
// workload and is in the workload's own namespace; a node reserved for no one refuses no claim.
TEST(ReservationRefusal, OnlyTheWorkloadsOwnClaimsOfItsNamespace) {
  EXPECT_EQ(reservationRefusal("", "", "ml", "c", "node-a"), "");
  EXPECT_EQ(reservationRefusal("", "ml/other", "ml", "c", "node-a"), "");
  EXPECT_EQ(reservationRefusal("ml/train", "ml/train", "ml", "c", "node-a"), "");
  EXPECT_EQ(reservationRefusal("ml/train", "", "ml", "c", "node-a"),
            "claim ml/c: node node-a is reserved for NeuronUltraServerWorkload ml/train; this "
            "claim belongs to no workload (claims made from a workload's ResourceClaimTemplate "
            "carry the annotation neuron.aws.com/workload)");
  EXPECT_NE(reservationRefusal("ml/train", "ml/other", "ml", "c", "node-a")
                .find("this claim belongs to workload ml/other"),
            std::string::npos);
  // A forged annotation from another namespace.
  EXPECT_EQ(reservationRefusal("ml/train", "ml/train", "guest", "c", "node-a"),
            "claim guest/c: node node-a is reserved for NeuronUltraServerWorkload ml/train; this "
            "claim names workload ml/train but is in namespace guest; only claims of namespace ml "
            "may use its reservation");
}

}  // namespace
}  // namespace torus::dra
