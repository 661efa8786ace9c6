#include "common/base/sleep_until_stopped.h"

#include <chrono>
#include <stop_token>
#include <thread>

#include <gtest/gtest.h>

namespace torus {
namespace {

using namespace std::chrono_literals;

TEST(SleepUntilStopped, SleepsTheWholeDurationWithoutAStopAndReturnsFalse) {
  std::stop_source source;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(sleepUntilStopped(source.get_token(), 50ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(SleepUntilStopped, ReturnsEarlyAndTrueWhenAStopIsRequested) {
  std::stop_source source;
  const auto start = std::chrono::steady_clock::now();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(20ms);
    source.request_stop();
  });
  EXPECT_TRUE(sleepUntilStopped(source.get_token(), 60s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(SleepUntilStopped, ReturnsAtOnceWhenTheStopWasAlreadyRequested) {
  std::stop_source source;
  source.request_stop();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(sleepUntilStopped(source.get_token(), 60s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(SleepUntilStopped, ATokenThatCannotBeStoppedSleepsTheWholeDuration) {
  EXPECT_FALSE(sleepUntilStopped(std::stop_token(), 10ms));
}

}  // namespace
}  // namespace torus
