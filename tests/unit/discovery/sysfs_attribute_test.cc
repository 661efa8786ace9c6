#include "node-runtime/discovery/sysfs_attribute.h"

#include <atomic>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"

namespace torus::discovery {
namespace {

TEST(SysfsAttribute, ParsesTheDriversFormats) {
  EXPECT_EQ(*parseCoreCount("8"), 8);  // core_count has no trailing newline
  EXPECT_EQ(*parseConnectedDevices("12, 1, 3, 4\n"), (std::vector<int>{12, 1, 3, 4}));
  EXPECT_TRUE(parseConnectedDevices("\n")->empty());  // a single-device instance
  EXPECT_EQ(*parseCounter("0\n"), 0U);
  EXPECT_EQ(*parseSerialNumber("5e7a00000000000f\n"), "5e7a00000000000f");
  EXPECT_EQ(*parseSerialNumber("\n"), "");  // the driver prints nothing when it cannot read it
  EXPECT_EQ(*parseResetState("1\n"), 1);
  EXPECT_EQ(*parseUltraServerNodeId("-1\n"), -1);
  EXPECT_EQ(*parseUltraServerId("0000000000000000\n"), "");
  EXPECT_EQ(*parseUltraServerModes("1,2,4\n"), (std::vector<int>{1, 2, 4}));
  EXPECT_TRUE(parseUltraServerModes("\n")->empty());
  EXPECT_EQ(*parseName("Trainium2\n"), "Trainium2");
}

struct GarbageCase {
  const char* description;
  std::string text;
};

// Every parser rejects each of these with a message that shows the text it got.
TEST(SysfsAttribute, EveryParserRejectsGarbageWithAClearMessage) {
  const std::vector<GarbageCase> garbage = {
      {"empty", ""},
      {"binary", std::string("\xff\xfe\x00\x07", 4)},
      {"negative", "-5"},
      {"overflow", "999999999999999999999999999999"},
      {"huge", std::string(4000, '9')},
      {"words", "not a number"},
      {"trailing junk", "4x"},
  };
  for (const GarbageCase& c : garbage) {
    SCOPED_TRACE(c.description);
    auto cores = parseCoreCount(c.text);
    ASSERT_FALSE(cores.ok());
    EXPECT_NE(cores.error().message.find("expected a core count in [1, 8], got \""),
              std::string::npos)
        << cores.error().message;
    EXPECT_LT(cores.error().message.size(), 200U);  // garbage is clipped, not echoed whole
    EXPECT_FALSE(parseResetState(c.text).ok());
    EXPECT_FALSE(parseUltraServerNodeId(c.text).ok() && c.text != "-5");
    if (!c.text.empty()) {
      EXPECT_FALSE(parseConnectedDevices(c.text).ok());
      EXPECT_FALSE(parseCounter(c.text).ok());
      EXPECT_FALSE(parseSerialNumber(c.text).ok());
    }
  }
  EXPECT_FALSE(parseCoreCount("0").ok());
  EXPECT_FALSE(parseCoreCount("9").ok());
  EXPECT_FALSE(parseConnectedDevices("1, 64").ok());
  EXPECT_FALSE(parseConnectedDevices("0,1,2,3,4,5,6,7,8").ok());
  EXPECT_FALSE(parseName(std::string("Trn\x01", 4)).ok());
}

// A seeded random walk over bytes the attributes might hold after corruption: no parser may
// crash, and each answers either a value or an error.
// Regression: the reset store truncated the file first, so a reader racing it saw "" and took
// the device out of service. A store now never shows a reader an empty attribute.
TEST(SysfsAttribute, AStoreIsNeverSeenHalfDone) {
  auto dir = TempDir::create("attr");
  ASSERT_TRUE(dir.ok());
  const auto reset = dir->path() / "reset";
  ASSERT_TRUE(writeFile(reset, "1\n").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> badReads{0};
  std::thread reader([&] {
    while (!stop) {
      if (!readParsed(reset, "reset", parseResetState).ok()) ++badReads;
    }
  });
  for (int i = 0; i < 20000; ++i)
    ASSERT_TRUE(writeAttribute(reset, i % 2 == 0 ? "1\n" : "2\n").ok());
  stop = true;
  reader.join();
  EXPECT_EQ(badReads.load(), 0);
  const auto missing = writeAttribute(dir->path() / "absent", "1\n");
  ASSERT_FALSE(missing.ok()) << "a store never creates an attribute";
  EXPECT_NE(missing.error().message.find("absent"), std::string::npos);
}

// Random bytes: every parser answers, and what one accepts is within what the driver can print
// (the error path is the common case and must say what it expected).
TEST(SysfsAttribute, RandomBytesGiveAValueInRangeOrANamedError) {
  std::mt19937 random(2026);
  const std::string alphabet =
      std::string("0123456789,- \n\tabcdefx+", 24) + std::string(1, '\0') + "\xff\x80";
  int accepted = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string text;
    const std::size_t length = random() % 40;
    for (std::size_t i = 0; i < length; ++i)
      text += alphabet[random() % alphabet.size()];
    if (auto cores = parseCoreCount(text)) {
      EXPECT_GE(*cores, 1) << text;
      ++accepted;
    } else {
      EXPECT_FALSE(cores.error().message.empty());
    }
    if (auto peers = parseConnectedDevices(text)) {
      for (const int peer : *peers)
        EXPECT_GE(peer, 0) << text;
    }
    (void)parseCounter(text);  // any 64-bit value is a counter
    if (auto serial = parseSerialNumber(text)) {
      EXPECT_TRUE(serial->empty() || serial->size() == 16) << text;
    }
    if (auto state = parseResetState(text)) {
      EXPECT_TRUE(*state >= 0 && *state <= 2) << text;
    }
    if (auto node = parseUltraServerNodeId(text)) {
      EXPECT_TRUE(*node >= -1 && *node <= 3) << text;
    }
    (void)parseUltraServerId(text);
    if (auto modes = parseUltraServerModes(text)) {
      for (const int mode : *modes)
        EXPECT_TRUE(mode >= 1 && mode <= 4) << text;
    }
    if (auto name = parseName(text)) {
      EXPECT_EQ(name->find('\n'), std::string::npos) << text;
    }
  }
  EXPECT_GT(accepted, 0);  // the alphabet reaches the success paths too
}

}  // namespace
}  // namespace torus::discovery
