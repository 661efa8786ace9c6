#include "node-runtime/simulator/sim_fault.h"

#include <gtest/gtest.h>

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
}

TEST(SimFault, RejectsNonsenseAndListsTheKnownKinds) {
  for (const char* text :
       {"", "ecc", "ecc:x", "ecc:1:0", "link-cut:1-1", "link-cut:1", "melt:1", "garble:1",
        "garble:1:../../etc/passwd", "garble:1:/abs", "device-node-missing:64"}) {
    auto fault = parseFault(text);
    ASSERT_FALSE(fault.ok()) << text;
    EXPECT_NE(fault.error().message.find("known: device-node-missing:N"), std::string::npos)
        << fault.error().message;
  }
}

}  // namespace
}  // namespace torus::simulator
