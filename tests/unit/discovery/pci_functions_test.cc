// Which PCI function each device is, from what the driver says: its load lines as every kernel
// log source writes them, a later load replacing an earlier one, lines of functions not bound
// here ignored; and the ioctl's number and answer as the driver's header defines them.
#include "node-runtime/discovery/pci_functions.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "node-runtime/discovery/driver_bdf_query.h"

namespace torus::discovery {
namespace {

TEST(DriverProbeLine, ParsesEveryPrefixTheKernelLogHas) {
  for (const char* line :
       {"** BDF: cc:00.0 => nd[0] (routing id: 0)",
        "3,812,4123456,-;neuron:neuron_pci_get_device_id_v3: ** BDF: b5:00.0 => nd[1] (routing "
        "id: 8)",
        "<3>[    4.123456] ** BDF: 10:1c.0 => nd[4] (routing id: 1)"}) {
    EXPECT_TRUE(parseDriverProbeLine(line).has_value()) << line;
  }
  const auto probe = parseDriverProbeLine("neuron:x: ** BDF: b5:00.0 => nd[1] (routing id: 8)");
  ASSERT_TRUE(probe.has_value());
  EXPECT_EQ(probe->busSlotFunction, "b5:00.0");
  EXPECT_EQ(probe->index, 1);
  EXPECT_EQ(probe->routingId, 8);
  for (const char* line :
       {"", "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR nd-id=0",
        "** BDF: zz:00.0 => nd[0] (routing id: 0)", "** BDF: cc:00.0 => nd[64] (routing id: 0)",
        "** BDF: cc:00.0 => nd[-1] (routing id: 0)", "** BDF: cc:00.0 => nd[3]"}) {
    EXPECT_FALSE(parseDriverProbeLine(line).has_value()) << line;
  }
}

TEST(DriverLogMap, PlacesBoundFunctionsAndTheLatestLoadWins) {
  const std::vector<std::string> bound = {"0000:b5:00.0", "0000:cc:00.0"};
  const std::string log =
      "** BDF: cc:00.0 => nd[1] (routing id: 8)\n"  // an earlier load
      "** BDF: b5:00.0 => nd[0] (routing id: 0)\n"  // an earlier load
      "** BDF: 6f:00.0 => nd[4] (routing id: 2)\n"  // not bound here: another node's
      "** BDF: cc:00.0 => nd[0] (routing id: 0)\n"  // the driver loaded again
      "** BDF: b5:00.0 => nd[1] (routing id: 8)\n";
  const NeuronPciMap map = mapFromDriverLog(log, bound, {0, 1, 4});
  EXPECT_EQ(map.source, "kernel log");
  EXPECT_EQ(map.functionOf, (std::map<int, std::string>{{0, "0000:cc:00.0"}, {1, "0000:b5:00.0"}}));
  EXPECT_TRUE(map.findings.empty());

  // Only the devices asked for, and nothing from a log without load lines.
  EXPECT_EQ(mapFromDriverLog(log, bound, {1}).functionOf.size(), 1U);
  const NeuronPciMap none = mapFromDriverLog("kernel: booted\n", bound, {0, 1});
  EXPECT_TRUE(none.functionOf.empty());
  EXPECT_EQ(none.source, "");
}

TEST(DriverLogMap, AFunctionInTwoDomainsPlacesNothing) {
  const NeuronPciMap map = mapFromDriverLog("** BDF: cc:00.0 => nd[0] (routing id: 0)\n",
                                            {"0000:cc:00.0", "0001:cc:00.0"}, {0});
  EXPECT_TRUE(map.functionOf.empty());
  ASSERT_EQ(map.findings.size(), 1U);
  EXPECT_NE(map.findings[0].find("several PCI domains"), std::string::npos);
}

// _IOR('N', 106, struct neuron_ioctl_device_bdf_ext *): read, 8-byte size (a pointer), type 'N'.
TEST(DriverBdfQuery, RequestNumberIsTheDriversAndNoOtherNodeAnswers) {
  EXPECT_EQ(deviceBdfExtRequest(), 0x80084e6aUL);
  DeviceBdfExt answer;
  answer.domain = 0;
  answer.bus = 0xcc;
  answer.slot = 0;
  answer.function = 0;
  EXPECT_EQ(bdfText(answer), "0000:cc:00.0");
  // /dev/null opens write-only but is not the Neuron driver's: ENOTTY, no answer at all.
  auto asked = queryDriverBdfs("/dev/null", 0, {0, 1});
  ASSERT_FALSE(asked.ok());
  EXPECT_NE(asked.error().message.find("did not answer"), std::string::npos)
      << asked.error().message;
  auto missing = queryDriverBdfs("/nonexistent/neuron0", 0, {0});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot open write-only"), std::string::npos);
}

}  // namespace
}  // namespace torus::discovery
