#include "node-runtime/simulator/sim_fault.h"

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "node-runtime/simulator/sim_reset.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::simulator {
namespace {

TEST(SimFault, ParsesEveryKnob) {
  EXPECT_EQ(parseFault("device-node-missing:3")->kind, FaultKind::kDeviceNodeMissing);
  auto garble = parseFault("garble:2:info/architecture/arch_type");
  ASSERT_TRUE(garble.ok());
  EXPECT_EQ(garble->attribute, "info/architecture/arch_type");
  EXPECT_EQ(parseFault("ecc:1")->count, 1U);
  EXPECT_EQ(parseFault("ecc:1:7")->count, 7U);
  auto cut = parseFault("link-cut:0-12");
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->device, 0);
  EXPECT_EQ(cut->otherDevice, 12);
  auto slowReset = parseFault("reset-slow:4");
  ASSERT_TRUE(slowReset.ok());
  EXPECT_EQ(slowReset->kind, FaultKind::kResetSlow);
  EXPECT_EQ(slowReset->resetMillis, 3000);
  EXPECT_EQ(parseFault("reset-slow:4:250")->resetMillis, 250);
  auto failedReset = parseFault("reset-fail:5");
  ASSERT_TRUE(failedReset.ok());
  EXPECT_EQ(failedReset->kind, FaultKind::kResetFail);
  EXPECT_EQ(failedReset->resetMillis, -1);  // the driver stand-in's usual time
  auto repairable = parseFault("ecc-repairable:3:2");
  ASSERT_TRUE(repairable.ok());
  EXPECT_EQ(repairable->kind, FaultKind::kEccRepairable);
  EXPECT_EQ(repairable->count, 2U);
  EXPECT_EQ(parseFault("probe-fail:6")->kind, FaultKind::kProbeFailed);
  // The faults whose state the driver cannot show say so.
  EXPECT_TRUE(inventedByTheSimulator(*cut));
  EXPECT_TRUE(inventedByTheSimulator(*parseFault("slow-link:0-1")));
  EXPECT_FALSE(inventedByTheSimulator(*repairable));
}

TEST(SimFault, RejectsNonsenseAndListsTheKnownKinds) {
  for (const char* text :
       {"", "ecc", "ecc:x", "ecc:1:0", "link-cut:1-1", "link-cut:1", "melt:1", "garble:1",
        "garble:1:../../etc/passwd", "garble:1:/abs", "device-node-missing:64", "reset-slow:1:-5",
        "reset-fail:1:x", "reset-slow:1:2:3", "probe-fail:1:2", "ecc-repairable:1:0"}) {
    auto fault = parseFault(text);
    ASSERT_FALSE(fault.ok()) << text;
    EXPECT_NE(fault.error().message.find("known: device-node-missing:N"), std::string::npos)
        << fault.error().message;
  }
}

// The reset faults are files the driver stand-in reads at each reset (sim_reset.h): written in
// the form it parses, and the tree's own reset attribute is left alone.
TEST(SimFault, ResetFaultsWriteTheBehaviourTheDriverStandInReads) {
  auto dir = TempDir::create("sim-fault");
  ASSERT_TRUE(dir.ok());
  SimulationSpec spec;
  spec.instanceType = "trn2.48xlarge";
  auto tree = writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  ASSERT_TRUE(applyFault(dir->path(), *parseFault("reset-fail:3")).ok());
  ASSERT_TRUE(applyFault(dir->path(), *parseFault("reset-slow:4:900")).ok());
  const auto behaviourOf = [&](int device) {
    auto text = readSmallFile(resetBehaviourFile(dir->path(), device));
    EXPECT_TRUE(text.ok());
    return parseResetBehaviour(text.ok() ? *text : "", std::chrono::milliseconds(300));
  };
  auto failing = behaviourOf(3);
  ASSERT_TRUE(failing.ok()) << failing.error().message;
  EXPECT_TRUE(failing->fails);
  EXPECT_EQ(failing->duration, std::chrono::milliseconds(300));
  auto slow = behaviourOf(4);
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_FALSE(slow->fails);
  EXPECT_EQ(slow->duration, std::chrono::milliseconds(900));
  EXPECT_FALSE(applyFault(dir->path(), *parseFault("reset-fail:40")).ok());  // no such device
}

}  // namespace
}  // namespace torus::simulator
