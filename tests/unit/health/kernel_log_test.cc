// Reading the driver's hardware-error lines out of the kernel log.
#include "node-runtime/health/kernel_log.h"

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

}  // namespace
}  // namespace torus::health
