// Times as Kubernetes writes them: whole seconds, and MicroTime (a Lease's times).
#include "common/base/utc_time.h"

#include <regex>

#include <gtest/gtest.h>

namespace torus {
namespace {

TEST(UtcTime, MicroTimeIsTheSecondsFormWithSixFractionalDigits) {
  const auto before = std::chrono::system_clock::now();
  const std::string micro = utcNowRfc3339Micro();
  ASSERT_TRUE(std::regex_match(micro, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")))
      << micro;
  const auto seconds = parseUtcRfc3339(micro.substr(0, 19) + "Z");
  ASSERT_TRUE(seconds.has_value()) << micro;
  EXPECT_LE(*seconds, std::chrono::system_clock::now());
  EXPECT_GE(*seconds, std::chrono::floor<std::chrono::seconds>(before));
}

}  // namespace
}  // namespace torus
