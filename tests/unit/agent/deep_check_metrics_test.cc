// A part of the deep check that could not run is "not checked" everywhere it is reported: never a
// pass in /metrics, in GET /deep-check's JSON or in `neuron-node-agent check`'s table.
#include "node-runtime/metrics/deep_check_metrics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "node-runtime/health/deep_check/deep_check_report.h"

namespace torus::metrics {
namespace {

health::DeepCheckResult memoryNotWritable() {
  health::DeepCheckResult result;
  result.devices = {
      {0, health::CheckState::kNotChecked,
       "device memory not tested: bar4: Read-only file system (the BAR must be writable to test "
       "it; the chart mounts /sys read-only)"},
      {1, health::CheckState::kPassed, "", 4 << 20, 0.01},
      {2, health::CheckState::kSkipped, "in use by a container or process; not touched"},
  };
  result.notChecked = {{"device_memory", "neuron0: device memory not tested: ..."}};
  return result;
}

TEST(DeepCheckReports, AMemoryTestThatCouldNotRunIsNeverReportedAsPassed) {
  const std::string text = renderDeepCheckMetrics(DeepCheckSnapshot{memoryNotWritable(), 1, 1});
  EXPECT_EQ(text.find("torus_deep_check_device_passed{neuron_device_index=\"0\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("torus_deep_check_device_passed{neuron_device_index=\"1\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("torus_deep_check_checked{part=\"device_memory\"} 0"), std::string::npos);

  const auto json = nlohmann::json::parse(health::deepCheckJson(memoryNotWritable()));
  EXPECT_EQ(json["devices"][0]["state"], "not checked") << json.dump();
  EXPECT_EQ(json["devices"][1]["state"], "passed");
  EXPECT_NE(health::deepCheckTable(memoryNotWritable()).find("not checked"), std::string::npos);
  // Nothing failed: the device is not taken out of service for a test that did not run.
  EXPECT_TRUE(health::deepCheckFailures(memoryNotWritable()).empty());
  EXPECT_EQ(memoryNotWritable().verdictByDevice().at(0), "");
}

TEST(DeepCheckReports, AMemoryTestThatRanEverywhereIsChecked) {
  health::DeepCheckResult result;
  result.devices = {{0, health::CheckState::kPassed, "", 4 << 20, 0.01}};
  const std::string text = renderDeepCheckMetrics(DeepCheckSnapshot{result, 1, 1});
  EXPECT_NE(text.find("torus_deep_check_checked{part=\"device_memory\"} 1"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace torus::metrics
