// The deep check's pure parts: memory patterns find a stuck bit and aliased addresses, the link
// rules name the pair for a down, under-trained or slow link and leave noise alone, and the ring
// follows NeuronLink on the real instance catalog.
#include <vector>

#include <gtest/gtest.h>

#include "common/topology/instance_catalog.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/health/deep_check/link_judgement.h"
#include "node-runtime/health/deep_check/memory_pattern.h"
#include "node-runtime/health/deep_check/ring_order.h"

namespace torus::health {
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

LinkObservation link(int a, int b) {
  LinkObservation observed;
  observed.a = a;
  observed.b = b;
  return observed;
}

TEST(LinkJudgement, DownLinkNamesThePair) {
  std::vector<LinkObservation> links = {link(0, 1), link(3, 7)};
  links[1].up = false;
  const auto problems = judgeLinks(links);
  EXPECT_EQ(problems[0], "");
  EXPECT_EQ(problems[1],
            "NeuronLink 3-7 is down: neuron3 and neuron7 no longer list each other in "
            "connected_devices");
}

TEST(LinkJudgement, UnderTrainedLinkIsSlow) {
  std::vector<LinkObservation> links = {link(0, 1), link(1, 2), link(2, 3)};
  links[1].speed = LinkSpeed{8, 32, "neuron1/neuron_link/neuron2/current_link_speed"};
  links[2].speed = LinkSpeed{32, 32, "neuron2/neuron_link/neuron3/current_link_speed"};
  const auto problems = judgeLinks(links);
  EXPECT_EQ(problems[1],
            "NeuronLink 1-2 is slow: trained at 8.0 of 32.0 GT/s "
            "(neuron1/neuron_link/neuron2/current_link_speed)");
  EXPECT_EQ(problems[0], "");  // no speed reported: nothing to judge, not a pass of speed
  EXPECT_EQ(problems[2], "");
}

TEST(LinkJudgement, UnreadableSpeedFilesAreReported) {
  std::vector<LinkObservation> links = {link(0, 1)};
  links[0].error = "cannot read its speed: garbage";
  EXPECT_EQ(judgeLinks(links)[0], "NeuronLink 0-1: cannot read its speed: garbage");
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
}  // namespace torus::health
