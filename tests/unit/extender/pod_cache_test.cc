#include "scheduler-extender/state/pod_cache.h"

#include <string>

#include <gtest/gtest.h>

namespace torus::extender {
namespace {

PodDemand pod(int i, std::size_t nameBytes = 8) {
  PodDemand demand;
  demand.uid = "uid-" + std::to_string(i);
  demand.name = std::string(nameBytes, 'p') + std::to_string(i);
  demand.namespace_ = "default";
  demand.count = 4;
  demand.resourceName = "aws.amazon.com/neuroncore";
  return demand;
}

TEST(PodCache, BoundedByBytesWhateverThePodsCarry) {
  PodCache cache(50'000, 1024 * 1024);
  for (int i = 0; i < 2000; ++i)
    cache.remember(pod(i, 20'000));  // 40 MB of names
  EXPECT_LE(cache.bytes(), 1024u * 1024);
  EXPECT_GE(cache.size(), 40u);                   // 1 MiB holds about 50 of them
  EXPECT_FALSE(cache.find("uid-0").has_value());  // the oldest went first
  ASSERT_TRUE(cache.find("uid-1999").has_value());
  EXPECT_EQ(cache.find("uid-1999")->count, 4);
}

TEST(PodCache, KeepsTheDemand) {
  PodCache cache;
  cache.remember(pod(1));
  const auto found = cache.find("uid-1");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->name, "pppppppp1");
  EXPECT_EQ(found->resourceName, "aws.amazon.com/neuroncore");
  EXPECT_LT(cache.bytes(), 1024u);
}

TEST(PodCache, BoundedByCountAndUpdatesInPlace) {
  PodCache cache(3);
  for (int i = 0; i < 5; ++i)
    cache.remember(pod(i));
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.find("uid-1").has_value());
  PodDemand bigger = pod(4);
  bigger.count = 16;
  const std::size_t before = cache.bytes();
  cache.remember(bigger);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.bytes(), before);
  EXPECT_EQ(cache.find("uid-4")->count, 16);
}

}  // namespace
}  // namespace torus::extender
