#include "common/config/settings.h"

#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "common/base/temp_dir.h"

namespace torus::config {
namespace {

struct Fixture {
  std::string configFile;
  std::string address = "0.0.0.0:9400";
  int lnc = 0;
  bool json = false;
  std::vector<std::string> faults;
  SettingTable table{"test"};

  Fixture() {
    table.addString("config", "T_CONFIG", "", "FILE", "settings file", &configFile);
    table.addString("metrics-addr", "T_METRICS_ADDR", "metricsAddr", "HOST:PORT", "listen",
                    &address);
    table.addInt("lnc", "T_LNC", "lnc", "1|2", "logical cores", 1, 2, &lnc);
    table.addSwitch("json", "", "json", "json output", &json);
    table.add({"fault", "", "faults", "FAULT", "", "a fault",
               [this](std::string_view v) -> Result<void> {
                 faults.emplace_back(v);
                 return okResult();
               },
               true});
  }
};

EnvironmentLookup fakeEnvironment(std::map<std::string, std::string> values) {
  return [values](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string writeConfig(const TempDir& dir, const std::string& text) {
  const std::string path = (dir.path() / "config.yaml").string();
  std::ofstream(path) << text;
  return path;
}

TEST(Settings, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  auto dir = TempDir::create("settings-test");
  ASSERT_TRUE(dir.ok());
  const std::string path =
      writeConfig(*dir, "version: v1\nmetricsAddr: 1.1.1.1:1\nlnc: 1\njson: true\n");
  Fixture f;
  const std::vector<std::string> args{"--config", path, "--lnc=2"};
  auto outcome = f.table.parse(args, fakeEnvironment({{"T_METRICS_ADDR", "2.2.2.2:2"}}));
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(f.address, "2.2.2.2:2");  // environment over file
  EXPECT_EQ(f.lnc, 2);                // flag over file
  EXPECT_TRUE(f.json);                // file over default
  bool sawLncFromFlag = false;
  for (const Effective& e : f.table.effective()) {
    if (e.flag == "lnc") sawLncFromFlag = e.source == Source::kFlag && e.value == "2";
  }
  EXPECT_TRUE(sawLncFromFlag);
}

TEST(Settings, ConfigFileFromEnvironment) {
  auto dir = TempDir::create("settings-test");
  const std::string path = writeConfig(*dir, "version: v1\nlnc: 2\n");
  Fixture f;
  ASSERT_TRUE(f.table.parse({}, fakeEnvironment({{"T_CONFIG", path}})).ok());
  EXPECT_EQ(f.lnc, 2);
}

struct BadCase {
  const char* description;
  std::vector<std::string> args;
  std::string yaml;  // written to a config file when non-empty
  std::string expectedInMessage;
};

TEST(Settings, BadInputNamesTheKeyAndValue) {
  const std::vector<BadCase> cases = {
      {"unknown flag", {"--nope"}, "", "unknown flag --nope"},
      {"single dash", {"-x"}, "", "unknown flag -x"},
      {"missing value", {"--lnc"}, "", "--lnc needs a value"},
      {"bad int flag", {"--lnc=3"}, "", "flag --lnc: expected integer in [1, 2], got \"3\""},
      {"bad switch", {"--json=perhaps"}, "", "flag --json: expected true or false"},
      {"unknown yaml key", {}, "version: v1\nlnk: 2\n", "unknown key \"lnk\""},
      {"missing version", {}, "lnc: 2\n", "missing \"version: v1\""},
      {"unknown version", {}, "version: v2\n", "unknown version \"v2\""},
      {"bad yaml value", {}, "version: v1\nlnc: many\n", "config key lnc: expected integer"},
      {"mapping value", {}, "version: v1\nlnc: {a: 1}\n", "key lnc: expected a value"},
      {"not yaml", {}, "version: v1\nlnc: [1, 2\n", "not valid YAML"},
      {"not a mapping", {}, "- 1\n- 2\n", "expected a mapping"},
  };
  for (const BadCase& c : cases) {
    auto dir = TempDir::create("settings-test");
    Fixture f;
    std::vector<std::string> args = c.args;
    if (!c.yaml.empty()) {
      args.push_back("--config");
      args.push_back(writeConfig(*dir, c.yaml));
    }
    auto outcome = f.table.parse(args, fakeEnvironment({}));
    ASSERT_FALSE(outcome.ok()) << c.description;
    EXPECT_NE(outcome.error().message.find(c.expectedInMessage), std::string::npos)
        << c.description << ": " << outcome.error().message;
  }
}

TEST(Settings, MissingConfigFileIsAnError) {
  Fixture f;
  auto outcome = f.table.parse({"--config=/nonexistent/torus.yaml"}, fakeEnvironment({}));
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.error().message.find("/nonexistent/torus.yaml"), std::string::npos);
}

TEST(Settings, RepeatableFlagsAndYamlListsAccumulate) {
  auto dir = TempDir::create("settings-test");
  const std::string path = writeConfig(*dir, "version: v1\nfaults: [a, b]\n");
  Fixture f;
  ASSERT_TRUE(
      f.table.parse({"--fault=c", "--fault", "d", "--config", path}, fakeEnvironment({})).ok());
  EXPECT_EQ(f.faults, (std::vector<std::string>{"a,b", "c", "d"}));
}

TEST(Settings, HelpAndPositionalArguments) {
  Fixture f;
  auto outcome = f.table.parse({"check", "--help"}, fakeEnvironment({}));
  ASSERT_TRUE(outcome.ok());
  EXPECT_TRUE(outcome->helpRequested);
  EXPECT_EQ(outcome->positional, (std::vector<std::string>{"check"}));
  const std::string help = f.table.helpText("test [flags]", "A test.");
  EXPECT_NE(help.find("--metrics-addr=HOST:PORT"), std::string::npos);
  EXPECT_NE(help.find("env T_METRICS_ADDR"), std::string::npos);
  EXPECT_NE(f.table.markdownReference().find("| `--lnc=1\\|2` | `T_LNC` | `lnc` | `0` |"),
            std::string::npos);
}

}  // namespace
}  // namespace torus::config
