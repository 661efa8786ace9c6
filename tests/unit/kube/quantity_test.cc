#include "common/kube/quantity.h"

#include <gtest/gtest.h>

namespace torus::kube {
namespace {

TEST(WholeQuantity, ReadsEveryFormTheGrammarAllows) {
  const std::pair<const char*, std::int64_t> cases[] = {
      {"4", 4},     {"+4", 4},         {"004", 4},    {"2k", 2000},   {"1Ki", 1024}, {"4Ki", 4096},
      {"4000m", 4}, {"1e3", 1000},     {"1E3", 1000}, {"2.5k", 2500}, {"0", 0},      {"0.0", 0},
      {"-0", 0},    {"16000000u", 16}, {"40e-1", 4},  {".5k", 500},   {"1.k", 1000},
  };
  for (const auto& [text, want] : cases) {
    const auto got = wholeQuantity(text, 0, 4096);
    ASSERT_TRUE(got.ok()) << text << ": " << got.error().message;
    EXPECT_EQ(*got, want) << text;
  }
}

TEST(WholeQuantity, SaysWhichRuleAValueBreaks) {
  const std::pair<const char*, const char*> cases[] = {
      {"1.5", "expected a whole number"},
      {"500m", "expected a whole number"},
      {"1e-1", "expected a whole number"},
      {"-1", "expected 0..4096, got \"-1\""},
      {"5k", "expected 0..4096, got \"5k\""},
      {"1Mi", "expected 0..4096"},
      {"1E", "expected 0..4096"},
      {"99999999999999999999", "expected 0..4096"},
      {"1Ei", "expected 0..4096"},
      {"", "expected a quantity such as 4, 2k or 1Ki"},
      {"k", "expected a quantity"},
      {"4 cores", "expected a quantity"},
      {"4KB", "expected a quantity"},
      {"1.2.3", "expected a quantity"},
      {"1e", "expected a quantity"},
      {"1e99999", "expected a quantity"},
      {"0x10", "expected a quantity"},
  };
  for (const auto& [text, message] : cases) {
    const auto got = wholeQuantity(text, 0, 4096);
    ASSERT_FALSE(got.ok()) << text << " gave " << *got;
    EXPECT_NE(got.error().message.find(message), std::string::npos)
        << text << " -> " << got.error().message;
  }
}

}  // namespace
}  // namespace torus::kube
