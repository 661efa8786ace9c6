// Reading the driver's hardware-error lines out of the kernel log.
#include "node-runtime/health/kernel_log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace torus::health {
namespace {

TEST(KernelLine, FindsTheTypeAndTheDevice) {
  const struct {
    const char* line;
    const char* type;
    int device;
  } cases[] = {
      {"6,1042,88213449,-;neuron: nd3: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR",
       "HBM_UNCORRECTABLE_ERROR", 3},
      {"[ 8821.3] neuron12 NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR count=1",
       "SRAM_UNCORRECTABLE_ERROR", 12},
      {"NEURON_HW_ERR=DMA_ERROR instance-id=i-0abc nd-id=5 nc-id=1", "DMA_ERROR", 5},
      {"NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR device=7", "NC_UNCORRECTABLE_ERROR", 7},
      {"NEURON_HW_ERR=HANG_ON_COLLECTIVES", "HANG_ON_COLLECTIVES", -1},
  };
  for (const auto& expected : cases) {
    const auto parsed = parseKernelLine(expected.line);
    ASSERT_TRUE(parsed) << expected.line;
    EXPECT_EQ(parsed->type, expected.type) << expected.line;
    EXPECT_EQ(parsed->device, expected.device) << expected.line;
  }
}

TEST(KernelLine, IgnoresEverythingElse) {
  for (const char* line : {"", "6,1,2,-;usb 1-1: new device", "NEURON_HW_ERR=", "neuron3 reset ok",
                           "NEURON_HW_ERR=lowercase"}) {
    EXPECT_FALSE(parseKernelLine(line)) << line;
  }
  // A word that merely starts with "nd" is not a device.
  EXPECT_EQ(parseKernelLine("NEURON_HW_ERR=DMA_ERROR ndx9 and4")->device, -1);
}

// A line written with the kernel's dev_err prefix names the PCI function; the device it is comes
// from each device's function as discovery placed it, and a function of no device here (another
// node's, on a bed whose nodes share one kernel) is none of this node's.
TEST(KernelLine, APciFunctionNamesTheDeviceOfThisNodeOnly) {
  const auto parsed = parseKernelLine(
      "<3>[ 9.1] neuron 0000:13:1e.0: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR at 0x1f00");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->pciAddress, "0000:13:1e.0");
  EXPECT_EQ(parseKernelLine("NEURON_HW_ERR=DMA_ERROR nd2 [ 12.5:1a:00.9]")->pciAddress, "")
      << "not an address: function 9 and a non-hex domain";
  const std::vector<std::string> mine = {"0000:10:1e.0", "0000:11:1e.0", "0000:12:1e.0",
                                         "0000:13:1e.0"};
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:13:1e.0"), 3);
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:10:1e.0"), 0);
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:23:1e.0"), std::nullopt) << "another node's";
}

// AWS's line (its troubleshooting guide, as libnrt writes it through the driver's printk ioctl)
// names the chip by serial number, the driver's info/serial_number: the one key that means the
// same chip wherever nd-id counts from; a serial of no device here is another node's chip.
TEST(KernelLine, ASerialNumberNamesTheChipOfThisNodeOnly) {
  const auto parsed = parseKernelLine(
      "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0592464924bd45322 "
      "hostname=ip-172-31-61-252 nd-id=0 nc-id=0 serial-num=19fcda00f5ff6eb9 "
      "action=TERMINATE_INSTANCE");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->serialNumber, "19fcda00f5ff6eb9");
  EXPECT_EQ(parsed->device, 0);
  EXPECT_EQ(parseKernelLine("NEURON_HW_ERR=DMA_ERROR serial-num=19FCDA00F5FF6EB9")->serialNumber,
            "19fcda00f5ff6eb9");
  EXPECT_EQ(parseKernelLine("NEURON_HW_ERR=DMA_ERROR serial-num=19fc")->serialNumber, "")
      << "not 16 digits";
  const std::vector<std::string> mine = {"5e7a000000000000", "", "19fcda00f5ff6eb9"};
  EXPECT_EQ(deviceOfSerialNumber(mine, "19fcda00f5ff6eb9"), 2);
  EXPECT_EQ(deviceOfSerialNumber(mine, "0123456789abcdef"), std::nullopt) << "another node's";
  EXPECT_EQ(deviceOfSerialNumber(mine, ""), std::nullopt) << "an unknown serial is no match";
}

// syslog(2) hands the whole ring each time: only what follows the previous read's last line is new.
TEST(KernelRing, OnlyLinesAfterThePreviousReadAreNew) {
  const std::string ring = "<6>[ 1.0] a\n<6>[ 2.0] b\n<6>[ 3.0] c\n";
  EXPECT_EQ(lastRingLine(ring), "<6>[ 3.0] c");
  EXPECT_EQ(ringLinesAfter(ring, "<6>[ 1.0] a"),
            (std::vector<std::string_view>{"<6>[ 2.0] b", "<6>[ 3.0] c"}));
  EXPECT_TRUE(ringLinesAfter(ring, "<6>[ 3.0] c").empty());
  // The ring wrapped past the last line seen: everything in it is newer.
  EXPECT_EQ(ringLinesAfter(ring, "<6>[ 0.5] gone").size(), 3U);
  // Nothing seen yet: all of it.
  EXPECT_EQ(ringLinesAfter(ring, "").size(), 3U);
  // Text that only contains the last line, or a line not yet complete, does not count.
  EXPECT_EQ(ringLinesAfter("x<6>[ 1.0] a\n<6>[ 2.0] b\n", "<6>[ 1.0] a").size(), 2U);
  EXPECT_EQ(ringLinesAfter("<6>[ 1.0] a\n<6>[ 2.0] half", "<6>[ 1.0] a").size(), 0U);
  EXPECT_EQ(lastRingLine("<6>[ 1.0] a\n<6>[ 2.0] half"), "<6>[ 1.0] a");
  // The same line twice: after its last occurrence.
  EXPECT_EQ(ringLinesAfter("a\nb\na\nc\n", "a"), (std::vector<std::string_view>{"c"}));
  // Empty lines are skipped, never taken as the line to resume after.
  EXPECT_EQ(lastRingLine("a\nb\n\n"), "b");
  EXPECT_EQ(lastRingLine(""), "");
  EXPECT_EQ(lastRingLine("\n"), "");
}

}  // namespace
}  // namespace torus::health
