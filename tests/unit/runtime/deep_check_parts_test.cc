// The deep check's pure parts: memory patterns find a stuck bit and aliased addresses, the link
// rules name the pair for a down, under-trained or slow link and leave noise alone, and the ring
// follows NeuronLink on the real instance catalog.
#include <vector>

#include <gtest/gtest.h>

#include "common/topology/instance_catalog.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/runtime/link_judgement.h"
#include "node-runtime/runtime/memory_pattern.h"
#include "node-runtime/runtime/ring_order.h"

namespace torus::runtime {
namespace {

TEST(MemoryPattern, EveryPatternVerifiesWhatItFilled) {
  std::vector<std::uint64_t> words(1000);
  for (const MemoryPattern pattern : kAllMemoryPatterns) {
    fillPattern(pattern, 0x4000, words);
    EXPECT_FALSE(verifyPattern(pattern, 0x4000, words).has_value()) << patternName(pattern);
  }
}

TEST(MemoryPattern, StuckBitIsFoundWithOffsetAndValues) {
  std::vector<std::uint64_t> words(256);
  fillPattern(MemoryPattern::kWalkingOnes, 0x1000, words);
  words[70] |= std::uint64_t{1} << 40;  // a data line stuck at 1
  const auto bad = verifyPattern(MemoryPattern::kWalkingOnes, 0x1000, words);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->offset, 0x1000U + 70 * 8);
  EXPECT_EQ(bad->expected, std::uint64_t{1} << 6);
  EXPECT_EQ(bad->actual, (std::uint64_t{1} << 6) | (std::uint64_t{1} << 40));
  EXPECT_EQ(bad->badWords, 1U);
}

TEST(MemoryPattern, AddressInAddressCatchesAliasedWordsThatWalkingOnesMisses) {
  // Words 3 and 67 share a cell (an address line stuck): the later write wins in both.
  std::vector<std::uint64_t> words(128);
  for (const MemoryPattern pattern :
       {MemoryPattern::kWalkingOnes, MemoryPattern::kAddressInAddress}) {
    fillPattern(pattern, 0, words);
    words[3] = words[67];
    const auto bad = verifyPattern(pattern, 0, words);
    if (pattern == MemoryPattern::kWalkingOnes) {
      EXPECT_FALSE(bad.has_value()) << "1<<3 == 1<<(67%64): walking ones cannot see this alias";
    } else {
      ASSERT_TRUE(bad.has_value());
      EXPECT_EQ(bad->offset, 3U * 8);
    }
  }
}

LinkObservation timed(int a, int b, double seconds) {
  LinkObservation link;
  link.a = a;
  link.b = b;
  link.seconds = seconds;
  return link;
}

TEST(LinkJudgement, DownLinkNamesThePair) {
  std::vector<LinkObservation> links = {timed(0, 1, 1e-3), timed(3, 7, 0)};
  links[1].up = false;
  links[1].seconds.reset();
  const auto problems = judgeLinks(links, {});
  EXPECT_EQ(problems[0], "");
  EXPECT_EQ(problems[1],
            "NeuronLink 3-7 is down: neuron3 and neuron7 no longer list each other in "
            "connected_devices");
}

TEST(LinkJudgement, UnderTrainedLinkIsSlowWhateverItsTiming) {
  std::vector<LinkObservation> links = {timed(0, 1, 1e-3), timed(1, 2, 1e-3), timed(2, 3, 1e-3)};
  links[1].speed = LinkSpeed{8, 32, "neuron1/neuron_link/neuron2/current_link_speed"};
  const auto problems = judgeLinks(links, {});
  EXPECT_EQ(problems[1],
            "NeuronLink 1-2 is slow: trained at 8.0 of 32.0 GT/s "
            "(neuron1/neuron_link/neuron2/current_link_speed)");
  EXPECT_EQ(problems[0], "");
}

TEST(LinkJudgement, TransferFarSlowerThanTheOtherLinksIsSlow) {
  const std::vector<LinkObservation> links = {timed(0, 1, 1.0e-3), timed(1, 2, 1.1e-3),
                                              timed(2, 3, 0.9e-3), timed(3, 0, 4.0e-3)};
  const auto problems = judgeLinks(links, {3.0, std::chrono::microseconds(200)});
  EXPECT_EQ(problems[0], "");
  EXPECT_EQ(problems[3],
            "NeuronLink 0-3 is slow: 4.000 ms per transfer, 4.0x the median of the other links "
            "(1.000 ms)");
}

TEST(LinkJudgement, MicrosecondNoiseBelowTheFloorIsNotSlow) {
  // 5x slower, but only 40 us more: a descheduled thread, not a degraded link.
  const std::vector<LinkObservation> links = {timed(0, 1, 10e-6), timed(1, 2, 10e-6),
                                              timed(2, 3, 10e-6), timed(3, 0, 50e-6)};
  for (const std::string& problem : judgeLinks(links, {3.0, std::chrono::microseconds(200)}))
    EXPECT_EQ(problem, "");
}

TEST(LinkJudgement, TwoLinksHaveNoBaselineToBeSlowAgainst) {
  const std::vector<LinkObservation> links = {timed(0, 1, 1e-3), timed(1, 2, 9e-3)};
  for (const std::string& problem : judgeLinks(links, {}))
    EXPECT_EQ(problem, "");
}

TEST(LinkJudgement, ParsesTheDriversSpeedTextAndRefusesOthers) {
  EXPECT_EQ(*parseLinkSpeed("32.0 GT/s\n"), 32.0);
  EXPECT_FALSE(parseLinkSpeed("fast").ok());
  EXPECT_FALSE(parseLinkSpeed("32.0 GB/s").ok());
  EXPECT_FALSE(parseLinkSpeed("0 GT/s").ok());
  EXPECT_FALSE(parseLinkSpeed("32.0 GT/s x").ok());
}

std::function<bool(int, int)> linksOf(const char* type, std::vector<std::pair<int, int>> cut = {}) {
  const topology::InstanceType* catalog = topology::findInstanceType(type);
  return [catalog, cut](int a, int b) {
    for (const auto& [x, y] : cut) {
      if ((a == x && b == y) || (a == y && b == x)) return false;
    }
    for (const int peer : topology::driverNeighbours(*catalog, a)) {
      if (peer == b) return true;
    }
    return false;
  };
}

std::vector<int> upTo(int count) {
  std::vector<int> devices;
  for (int i = 0; i < count; ++i)
    devices.push_back(i);
  return devices;
}

TEST(RingOrder, Trn2TorusGetsAClosedRingAlongNeuronLinkEvenWithALinkCut) {
  for (const auto& cut : {std::vector<std::pair<int, int>>{}, {{3, 7}}}) {
    const auto linked = linksOf("trn2.48xlarge", cut);
    const NeuronLinkRing ring = neuronLinkRing(upTo(16), linked);
    ASSERT_EQ(ring.order.size(), 16U);
    EXPECT_TRUE(ring.closed);
    EXPECT_TRUE(ring.alongLinks);
    for (std::size_t i = 0; i < 16; ++i)
      EXPECT_TRUE(linked(ring.order[i], ring.order[(i + 1) % 16])) << i;
  }
}

TEST(RingOrder, ChainHasAPathButNoClosedRing) {
  const NeuronLinkRing ring = neuronLinkRing(upTo(6), linksOf("inf2.24xlarge"));
  EXPECT_EQ(ring.order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(ring.closed);
  EXPECT_TRUE(ring.alongLinks);
}

TEST(RingOrder, DisconnectedDevicesStillAllTakePart) {
  const NeuronLinkRing ring = neuronLinkRing(upTo(6), linksOf("inf2.24xlarge", {{2, 3}}));
  EXPECT_EQ(ring.order.size(), 6U);
  EXPECT_FALSE(ring.alongLinks);
}

}  // namespace
}  // namespace torus::runtime
