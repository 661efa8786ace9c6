#include "common/topology/core_set.h"

#include <random>

#include <gtest/gtest.h>

namespace torus::topology {
namespace {

TEST(CoreSet, ParsesAndFormatsRanges) {
  auto set = CoreSet::parse("0-3, 8,10-11");
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->size(), 7);
  EXPECT_EQ(set->toRangeString(), "0-3,8,10-11");
  EXPECT_EQ(set->toListString(), "0,1,2,3,8,10,11");
  EXPECT_EQ(set->first(), 0);
  EXPECT_EQ(set->last(), 11);
  EXPECT_FALSE(set->isContiguous());
  EXPECT_TRUE(CoreSet::range(60, 4).isContiguous());
  EXPECT_TRUE(CoreSet::parse("")->empty());
}

TEST(CoreSet, RejectsBadTextWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"3-1", "runs backwards"},   {"1,1", "appears twice"},   {"0-3,2", "appears twice"},
      {"512", "expected integer"}, {"-1", "expected integer"}, {"a", "expected integer"},
      {"1,,2", "empty item"},      {"1-", "expected integer"}, {"99999999999", "expected integer"},
  };
  for (const auto& [text, why] : cases) {
    auto set = CoreSet::parse(text);
    ASSERT_FALSE(set.ok()) << text;
    EXPECT_NE(set.error().message.find(why), std::string::npos)
        << text << ": " << set.error().message;
  }
}

TEST(CoreSet, SetAlgebraAcrossWordBoundaries) {
  const CoreSet a = CoreSet::range(60, 10);  // spans words 0 and 1
  const CoreSet b = CoreSet::range(64, 64);
  EXPECT_EQ((a & b).toRangeString(), "64-69");
  EXPECT_EQ((a - b).toRangeString(), "60-63");
  EXPECT_EQ((a | b).toRangeString(), "60-127");
  EXPECT_TRUE((a & b).isSubsetOf(a));
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE(CoreSet::range(0, 4).intersects(CoreSet::range(4, 4)));
  EXPECT_EQ(CoreSet::range(0, 512).size(), 512);
  EXPECT_EQ(CoreSet::range(0, 512).last(), 511);
}

TEST(CoreSet, RandomSetsRoundTripThroughText) {
  std::mt19937 random(7);
  for (int iteration = 0; iteration < 500; ++iteration) {
    CoreSet set;
    const int count = static_cast<int>(random() % 64);
    for (int i = 0; i < count; ++i)
      set.insert(static_cast<int>(random() % CoreSet::kCapacity));
    auto parsed = CoreSet::parse(set.toRangeString());
    ASSERT_TRUE(parsed.ok()) << set.toRangeString();
    EXPECT_EQ(*parsed, set);
    EXPECT_EQ(*CoreSet::parse(set.toListString()), set);
  }
}

}  // namespace
}  // namespace torus::topology
