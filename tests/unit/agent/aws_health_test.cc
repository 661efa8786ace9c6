// AWS's health conditions as a function of the kernel's errors, the clear policy and what the
// node carried at start; the boot-time and RFC 3339 readers they rest on.
#include "node-runtime/agent/rules/aws_health.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/utc_time.h"

namespace torus::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

HardwareErrorSeen error(const std::string& type, int device, Clock::time_point last,
                        int count = 1) {
  HardwareErrorSeen seen;
  seen.type = type;
  seen.device = device;
  seen.count = count;
  seen.last = last;
  seen.lastWall = std::chrono::system_clock::time_point(std::chrono::seconds(1'790'000'000));
  return seen;
}

const NodeCondition* find(const AwsConditions& conditions, const std::string& type) {
  for (const NodeCondition& condition : conditions.conditions) {
    if (condition.type == type) return &condition;
  }
  return nullptr;
}

TEST(AwsHealth, NoErrorsAreAwsHealthyStates) {
  AwsHealthOptions options;
  options.acceleratedHardwareReady = true;
  const AwsConditions out = awsHealthConditions({}, options, Clock::now());
  ASSERT_EQ(out.conditions.size(), 2U);
  EXPECT_EQ(*find(out, "NeuronHealth"),
            (NodeCondition{"NeuronHealth", "False", "NeuronHasNoError", "Neuron has no error"}));
  EXPECT_EQ(find(out, "AcceleratedHardwareReady")->status, "True");
  EXPECT_EQ(find(out, "AcceleratedHardwareReady")->reason, "NeuronAcceleratedHardwareIsReady");
  EXPECT_FALSE(out.changesAt);
}

TEST(AwsHealth, EachOfAwssFourTypesHasItsReasons) {
  AwsHealthOptions options;
  options.acceleratedHardwareReady = true;
  const std::pair<const char*, const char*> expected[] = {
      {"SRAM_UNCORRECTABLE_ERROR", "NeuronSRAMUncorrectableError"},
      {"NC_UNCORRECTABLE_ERROR", "NeuronNCUncorrectableError"},
      {"HBM_UNCORRECTABLE_ERROR", "NeuronHBMUncorrectableError"},
      {"DMA_ERROR", "NeuronDMAError"}};
  for (const auto& [type, agentReason] : expected) {
    const AwsConditions out =
        awsHealthConditions({error(type, 3, Clock::now())}, options, Clock::now());
    EXPECT_EQ(find(out, "NeuronHealth")->status, "True");
    EXPECT_EQ(find(out, "NeuronHealth")->reason, std::string("NeuronHasError_") + type);
    EXPECT_EQ(find(out, "AcceleratedHardwareReady")->status, "False");
    EXPECT_EQ(find(out, "AcceleratedHardwareReady")->reason, agentReason);
  }
}

TEST(AwsHealth, OtherTypesAreNotAwssErrorsAndTheLatestLeads) {
  const auto now = Clock::now();
  AwsHealthOptions options;
  EXPECT_EQ(find(awsHealthConditions({error("HANG_ON_COLLECTIVES", 1, now)}, options, now),
                 "NeuronHealth")
                ->status,
            "False");
  const AwsConditions out = awsHealthConditions(
      {error("HBM_UNCORRECTABLE_ERROR", 4, now - 10s, 3), error("DMA_ERROR", -1, now - 1s)},
      options, now);
  EXPECT_EQ(find(out, "NeuronHealth")->reason, "NeuronHasError_DMA_ERROR");
  const std::string& message = find(out, "NeuronHealth")->message;
  EXPECT_NE(message.find("HBM_UNCORRECTABLE_ERROR on neuron4 (3 times"), std::string::npos)
      << message;
  EXPECT_NE(message.find("DMA_ERROR on no named device (1 time"), std::string::npos) << message;
}

TEST(AwsHealth, HoldClearsAfterTheHoldAndSaysWhenRebootNever) {
  const auto now = Clock::now();
  AwsHealthOptions options;
  options.clear = AwsHealthClear::kHold;
  options.hold = 5s;
  const std::vector<HardwareErrorSeen> seen = {error("NC_UNCORRECTABLE_ERROR", 0, now - 2s)};
  AwsConditions out = awsHealthConditions(seen, options, now);
  EXPECT_EQ(find(out, "NeuronHealth")->status, "True");
  ASSERT_TRUE(out.changesAt);
  EXPECT_EQ(*out.changesAt, now + 3s);
  EXPECT_EQ(find(awsHealthConditions(seen, options, now + 3s), "NeuronHealth")->status, "False");
  options.clear = AwsHealthClear::kReboot;
  out = awsHealthConditions(seen, options, now + 1h);
  EXPECT_EQ(find(out, "NeuronHealth")->status, "True");
  EXPECT_FALSE(out.changesAt);
}

TEST(AwsHealth, AnErrorOfThisBootIsKeptAcrossARestartUnderTheRebootPolicyOnly) {
  const auto boot = std::chrono::system_clock::now() - 1h;
  nlohmann::json node = {{"status",
                          {{"conditions",
                            {{{"type", "Ready"}, {"status", "True"}},
                             {{"type", "NeuronHealth"},
                              {"status", "True"},
                              {"reason", "NeuronHasError_DMA_ERROR"},
                              {"message", "m"},
                              {"lastTransitionTime", utcRfc3339(boot + 10min)}}}}}}};
  const auto inherited = neuronHealthOfThisBoot(node, boot);
  ASSERT_TRUE(inherited);
  EXPECT_EQ(inherited->reason, "NeuronHasError_DMA_ERROR");
  AwsHealthOptions options;
  EXPECT_EQ(*find(awsHealthConditions({}, options, Clock::now(), inherited), "NeuronHealth"),
            *inherited);
  options.clear = AwsHealthClear::kHold;
  EXPECT_EQ(find(awsHealthConditions({}, options, Clock::now(), inherited), "NeuronHealth")->status,
            "False");
  // From before the boot, unparsable, or not an error: nothing to keep.
  EXPECT_FALSE(neuronHealthOfThisBoot(node, boot + 1h));
  node["status"]["conditions"][1]["lastTransitionTime"] = "yesterday";
  EXPECT_FALSE(neuronHealthOfThisBoot(node, boot));
  EXPECT_FALSE(neuronHealthOfThisBoot(nlohmann::json::object(), boot));
  EXPECT_FALSE(neuronHealthOfThisBoot({{"status", {{"conditions", 7}}}}, boot));
}

TEST(AwsHealth, TheLogIsBoundedAndCountsRepeats) {
  HardwareErrorLog log;
  int notified = 0;
  const auto subscription = log.onChange([&] { ++notified; });
  log.report("DMA_ERROR", 1);
  log.report("DMA_ERROR", 1);
  ASSERT_EQ(log.seen().size(), 1U);
  EXPECT_EQ(log.seen()[0].count, 2);
  for (int i = 0; i < 1000; ++i)
    log.report("T" + std::to_string(i), 0);
  EXPECT_EQ(log.seen().size(), HardwareErrorLog::kMaxEntries);
  EXPECT_EQ(notified, 1002);
}

TEST(AwsHealth, ClearPolicyParsesOrNamesTheChoices) {
  EXPECT_EQ(*parseAwsHealthClear("reboot"), AwsHealthClear::kReboot);
  EXPECT_EQ(*parseAwsHealthClear("hold"), AwsHealthClear::kHold);
  const auto bad = parseAwsHealthClear("never");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("reboot"), std::string::npos);
}

TEST(UtcTime, RoundTripsAndRefusesOtherForms) {
  const auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'795'000'123));
  EXPECT_EQ(parseUtcRfc3339(utcRfc3339(at)), at);
  for (const char* bad : {"", "2026-11-24T16:00:00", "2026-11-24T16:00:00+01:00",
                          "2026-13-24T16:00:00Z", "2026-11-24T16:00:00Zx", "garbage-garbage-gar"}) {
    EXPECT_FALSE(parseUtcRfc3339(bad)) << bad;
  }
}

TEST(HostBootTime, ReadsBtimeOrNothing) {
  auto dir = TempDir::create("boot");
  ASSERT_TRUE(dir.ok());
  const auto stat = dir->path() / "stat";
  ASSERT_TRUE(writeFile(stat, "cpu 1 2 3\nbtime 1790000000\nprocesses 9\n").ok());
  EXPECT_EQ(hostBootTime(stat.string()),
            std::chrono::system_clock::time_point(std::chrono::seconds(1'790'000'000)));
  ASSERT_TRUE(writeFile(stat, "btime x\n").ok());
  EXPECT_FALSE(hostBootTime(stat.string()));
  EXPECT_FALSE(hostBootTime((dir->path() / "missing").string()));
  EXPECT_TRUE(hostBootTime("/proc/stat")) << "this host's";
}

}  // namespace
}  // namespace torus::agent
