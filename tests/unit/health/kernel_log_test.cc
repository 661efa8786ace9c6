// Reading the driver's hardware-error lines out of the kernel log.
#include "node-runtime/health/kernel_log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace torus::health {
namespace {

constexpr const char* kSerial = "19fcda00f5ff6eb9";

// Every shape the runtime (through the driver's printk ioctl: "%s\n", no prefix) and the driver
// write, as /dev/kmsg, syslog(2) and a file of bare messages hand them.
TEST(KernelLine, AcceptsTheShapesTheRuntimeAndTheDriverWrite) {
  const std::string aws =
      "NEURON_HW_ERR=SRAM_UNCORRECTABLE_ERROR instance-id=i-0592464924bd45322 "
      "hostname=ip-172-31-61-252 nd-id=0 nc-id=0 serial-num=19fcda00f5ff6eb9 "
      "action=TERMINATE_INSTANCE";
  const struct {
    std::string description;
    std::string line;
    const char* type;
    int device;
    const char* pciAddress;
  } cases[] = {
      {"AWS's documented line, bare", aws, "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"/dev/kmsg record", "3,1042,88213449,-;" + aws, "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"/dev/kmsg record, continuation flag", "3,7,1,c;" + aws, "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"syslog(2) with the time", "<3>[ 8821.301234] " + aws, "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"syslog(2) with time and caller", "<3>[    5.000000][ T4242] " + aws,
       "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"syslog(2) without the time", "<3>" + aws, "SRAM_UNCORRECTABLE_ERROR", 0, ""},
      {"type at the end of the message", "NEURON_HW_ERR=DMA_ERROR serial-num=19FCDA00F5FF6EB9",
       "DMA_ERROR", -1, ""},
      {"the driver's pr_fmt prefix",
       "<3>[ 9.1] neuron:ndhal_report: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd-id=12 serial-num=" +
           std::string(kSerial),
       "HBM_UNCORRECTABLE_ERROR", 12, ""},
      {"the driver's dev_err prefix names the function",
       "<3>[ 9.1] neuron-driver 0000:13:1e.0: NEURON_HW_ERR=NC_UNCORRECTABLE_ERROR serial-num=" +
           std::string(kSerial),
       "NC_UNCORRECTABLE_ERROR", -1, "0000:13:1e.0"},
      {"/dev/kmsg's DEVICE= field names the function",
       "3,90,1000,-;NEURON_HW_ERR=DMA_ERROR serial-num=" + std::string(kSerial) +
           "\n SUBSYSTEM=pci\n DEVICE=+pci:0000:10:1e.0",
       "DMA_ERROR", -1, "0000:10:1e.0"},
  };
  for (const auto& expected : cases) {
    const auto parsed = parseKernelLine(expected.line);
    ASSERT_TRUE(parsed) << expected.description;
    EXPECT_EQ(parsed->type, expected.type) << expected.description;
    EXPECT_EQ(parsed->device, expected.device) << expected.description;
    EXPECT_EQ(parsed->serialNumber, kSerial) << expected.description;
    EXPECT_EQ(parsed->pciAddress, expected.pciAddress) << expected.description;
  }
}

// What a tenant without a device can get into the log (a segfault in a file or a process named
// like a report), and lines that quote the marker or do not name a chip, are not reports.
TEST(KernelLine, RefusesForgedAndIncompleteShapes) {
  const std::string serial = std::string(" serial-num=") + kSerial;
  const struct {
    std::string description;
    std::string line;
  } cases[] = {
      {"a segfault in a file named like a report",
       "<6>[ 5.0] a.out[42]: segfault at 0 ip 0000000000401136 sp 00007ffc00000000 error 4 in "
       "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR" +
           serial + "[401000+1000] likely on CPU 1 (core 1, socket 0)"},
      {"the audit's segfault line",
       "<6>[ 5.0] a.out[42]: segfault at 0 ip 0000000000401136 sp 00007ffc00000000 error 4 in "
       "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd3[401000+1000] likely on CPU 1 (core 1, socket 0)"},
      {"a process named like a report (its comm opens the message)",
       "<6>[ 5.0] NEURON_HW_ERR=X[42]: segfault at 0 ip 0 sp 0 error 4 in a.out" + serial},
      {"a type that does not end at whitespace",
       "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR[401000+1000]" + serial},
      {"the marker mid-line", "torus test: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR" + serial},
      {"the marker mid-line of a kmsg record",
       "3,90,1000,-;neuron: nd7: NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR" + serial},
      {"no serial", "NEURON_HW_ERR=HBM_UNCORRECTABLE_ERROR nd-id=3"},
      {"a short serial", "NEURON_HW_ERR=DMA_ERROR serial-num=19fc"},
      {"a serial that is not hexadecimal", "NEURON_HW_ERR=DMA_ERROR serial-num=19fcda00f5ff6eZZ"},
      {"two serials", "NEURON_HW_ERR=DMA_ERROR" + serial + " serial-num=0123456789abcdef"},
      {"the serial glued to another word", "NEURON_HW_ERR=DMA_ERROR x" + serial.substr(1)},
      {"no type", "NEURON_HW_ERR=" + serial},
      {"a lower-case type", "NEURON_HW_ERR=lowercase" + serial},
      {"dev_err prefix and DEVICE= field disagree",
       "3,90,1000,-;neuron-driver 0000:13:1e.0: NEURON_HW_ERR=DMA_ERROR" + serial +
           "\n DEVICE=+pci:0000:10:1e.0"},
      {"another driver's dev_err prefix",
       "<3>[ 9.1] usb 0000:13:1e.0: NEURON_HW_ERR=DMA_ERROR" + serial},
      {"nothing of the kind", "6,1,2,-;usb 1-1: new device"},
      {"empty", ""},
  };
  for (const auto& refused : cases)
    EXPECT_FALSE(parseKernelLine(refused.line)) << refused.description;
}

// A PCI function names the device it is on this node; a function of no device here (another
// node's, on a bed whose nodes share one kernel) is none of this node's.
TEST(KernelLine, APciFunctionNamesTheDeviceOfThisNodeOnly) {
  const std::vector<std::string> mine = {"0000:10:1e.0", "0000:11:1e.0", "0000:12:1e.0",
                                         "0000:13:1e.0"};
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:13:1e.0"), 3);
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:10:1e.0"), 0);
  EXPECT_EQ(deviceOfPciFunction(mine, "0000:23:1e.0"), std::nullopt) << "another node's";
}

// The serial number (the driver's info/serial_number) is the one key that means the same chip
// wherever nd-id counts from; a serial of no device here is another node's chip.
TEST(KernelLine, ASerialNumberNamesTheChipOfThisNodeOnly) {
  const std::vector<std::string> mine = {"5e7a000000000000", "", kSerial};
  EXPECT_EQ(deviceOfSerialNumber(mine, kSerial), 2);
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
