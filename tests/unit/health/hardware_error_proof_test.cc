// A kernel-log claim of a hardware error counts only when the chip's firmware ECC counters rose
// within the hold window around it.
#include "node-runtime/health/hardware_error_proof.h"

#include <gtest/gtest.h>

namespace torus::health {
namespace {

using std::chrono::seconds;
constexpr std::chrono::milliseconds kWindow = seconds(60);
const ClaimEvidence::TimePoint kStart{};

TEST(ClaimEvidence, AClaimAloneIsNeverConfirmed) {
  ClaimEvidence evidence(kWindow);
  evidence.observe(3, 0, kStart);
  EXPECT_FALSE(evidence.claim(3, "HBM_UNCORRECTABLE_ERROR", kStart + seconds(1)));
  evidence.observe(3, 0, kStart + seconds(30));
  EXPECT_TRUE(evidence.settle(kStart + seconds(30)).confirmed.empty());
  const auto settled = evidence.settle(kStart + seconds(62));
  EXPECT_TRUE(settled.confirmed.empty());
  ASSERT_EQ(settled.unproven.size(), 1U) << "dropped once its window passed";
  EXPECT_EQ(settled.unproven[0].device, 3);
  EXPECT_EQ(evidence.pending(), 0U);
}

TEST(ClaimEvidence, ARiseAfterTheClaimWithinTheWindowConfirmsIt) {
  ClaimEvidence evidence(kWindow);
  evidence.observe(3, 0, kStart);
  EXPECT_FALSE(evidence.claim(3, "HBM_UNCORRECTABLE_ERROR", kStart + seconds(1)));
  evidence.observe(3, 1, kStart + seconds(20));
  const auto settled = evidence.settle(kStart + seconds(20));
  ASSERT_EQ(settled.confirmed.size(), 1U);
  EXPECT_EQ(settled.confirmed[0].type, "HBM_UNCORRECTABLE_ERROR");
}

TEST(ClaimEvidence, ARiseShortlyBeforeTheClaimConfirmsItAtOnce) {
  ClaimEvidence evidence(kWindow);
  evidence.observe(5, 2, kStart);
  evidence.observe(5, 3, kStart + seconds(10));
  EXPECT_TRUE(evidence.claim(5, "SRAM_UNCORRECTABLE_ERROR", kStart + seconds(12)));
  EXPECT_EQ(evidence.pending(), 0U);
}

TEST(ClaimEvidence, WhatDoesNotCountAsARise) {
  const struct {
    const char* description;
    std::uint64_t baseline;
    std::uint64_t later;
    int riseDevice;
    seconds claimAt;
  } cases[] = {
      {"non-zero since before the agent started", 4, 4, 3, seconds(1)},
      {"falling (a reset cleared it)", 4, 0, 3, seconds(1)},
      {"another chip's counter rose", 0, 1, 4, seconds(1)},
      {"the rise was long before the claim", 0, 1, 3, seconds(200)},
  };
  for (const auto& c : cases) {
    ClaimEvidence evidence(kWindow);
    evidence.observe(3, c.baseline, kStart);
    evidence.observe(4, c.baseline, kStart);
    evidence.observe(c.riseDevice, c.later, kStart + seconds(5));
    EXPECT_FALSE(evidence.claim(3, "DMA_ERROR", kStart + c.claimAt)) << c.description;
    EXPECT_TRUE(evidence.settle(kStart + c.claimAt + seconds(1)).confirmed.empty())
        << c.description;
  }
}

// A flood of invented claims cannot grow without bound.
TEST(ClaimEvidence, PendingClaimsAreBounded) {
  ClaimEvidence evidence(kWindow);
  for (int i = 0; i < 1000; ++i)
    evidence.claim(i % 16, "TYPE_" + std::to_string(i), kStart + std::chrono::milliseconds(i));
  EXPECT_EQ(evidence.pending(), ClaimEvidence::kMaxPending);
  evidence.claim(1, "TYPE_999", kStart + seconds(2));
  EXPECT_EQ(evidence.pending(), ClaimEvidence::kMaxPending) << "a repeat moves, not adds";
}

}  // namespace
}  // namespace torus::health
