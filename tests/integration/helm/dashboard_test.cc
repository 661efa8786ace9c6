// The chart's Grafana dashboard: its ConfigMap carries the sidecar's label, every PromQL
// expression parses (promtool check rules) and names only metrics the project exports — read
// from the running agent's and extender's /metrics, not from a list kept by hand.
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kChart = std::string(TORUS_SOURCE_DIR) + "/helm/torus";

json renderedDashboard() {
  const ProcessResult result = runProcess({TORUS_HELM, "template", "torus", kChart, "--namespace",
                                           "monitoring", "--set", "grafanaDashboard.enabled=true"});
  EXPECT_EQ(result.exitCode, 0) << result.err;
  for (const YAML::Node& object : YAML::LoadAll(result.out)) {
    if (!object || object["kind"].as<std::string>("") != "ConfigMap") continue;
    const YAML::Node labels = object["metadata"]["labels"];
    if (!labels || labels["grafana_dashboard"].as<std::string>("") != "1") continue;
    return json::parse(object["data"]["torus-neuron.json"].as<std::string>());
  }
  ADD_FAILURE() << "no ConfigMap labelled grafana_dashboard: \"1\"";
  return json::object();
}

void collectExpressions(const json& panels, std::vector<std::string>& out) {
  for (const json& panel : panels) {
    for (const json& target : panel.value("targets", json::array()))
      out.push_back(target.at("expr").get<std::string>());
    collectExpressions(panel.value("panels", json::array()), out);
  }
}

// Grafana's variables, as Prometheus would see them once substituted.
std::string substituted(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "5m");
  return std::regex_replace(expr, std::regex(R"(\$node)"), ".*");
}

// The metric names an expression reads: identifiers left once strings, label matchers, ranges,
// grouping clauses, function calls, keywords and numbers are taken out.
std::set<std::string> metricNames(std::string expr) {
  expr = std::regex_replace(expr, std::regex(R"("(\\.|[^"\\])*")"), "\"\"");
  expr = std::regex_replace(expr, std::regex(R"(\{[^}]*\})"), " ");
  expr = std::regex_replace(expr, std::regex(R"(\[[^\]]*\])"), " ");
  expr = std::regex_replace(
      expr, std::regex(R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))"), " ");
  expr = std::regex_replace(expr, std::regex(R"([A-Za-z_][A-Za-z0-9_]*\s*\()"), " (");
  static const std::set<std::string> kKeywords = {"and", "or", "unless", "bool", "offset"};
  std::set<std::string> names;
  const std::regex identifier(R"([A-Za-z_:][A-Za-z0-9_:]*)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), identifier);
       it != std::sregex_iterator(); ++it) {
    const std::string name = it->str();
    const auto at = static_cast<std::size_t>(it->position());
    const bool partOfNumber =
        at > 0 && (std::isdigit(static_cast<unsigned char>(expr[at - 1])) || expr[at - 1] == '.');
    if (!partOfNumber && kKeywords.count(name) == 0) names.insert(name);
  }
  return names;
}

// Every sample name a /metrics exposes, from its TYPE lines (families without samples too).
void exportedNames(const std::string& text, std::set<std::string>& names) {
  const std::regex type(R"(^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)$)");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch match;
    if (!std::regex_match(line, match, type)) continue;
    names.insert(match[1]);
    if (match[2] == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        names.insert(match[1].str() + suffix);
    }
  }
}

std::string metricsOf(int port) {
  const auto reply = httpGet(port, "/metrics");
  return reply && reply->substr(0, 3) == "200" ? reply->substr(4) : "";
}

TEST(GrafanaDashboard, ParsesAndNamesOnlyMetricsWeExport) {
  const json dashboard = renderedDashboard();
  std::vector<std::string> expressions;
  collectExpressions(dashboard.value("panels", json::array()), expressions);
  ASSERT_GE(expressions.size(), 20U);
  for (const json& variable : dashboard["templating"]["list"]) {
    const std::string definition = variable.value("definition", "");
    std::smatch match;
    if (std::regex_match(definition, match, std::regex(R"(label_values\((\w+), *\w+\))"))) {
      expressions.push_back(match[1]);
    }
  }

  // Syntax: promtool parses every expression as a recording rule.
  auto dir = TempDir::create("dashboard");
  ASSERT_TRUE(dir.ok());
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    rules += "      - record: dashboard:expr" + std::to_string(i) +
             "\n        expr: " + json(substituted(expressions[i])).dump() + "\n";
  }
  const auto file = dir->path() / "rules.yaml";
  ASSERT_TRUE(writeFile(file, rules).ok());
  const ProcessResult checked = runProcess({TORUS_PROMTOOL, "check", "rules", file.string()});
  EXPECT_EQ(checked.exitCode, 0) << checked.out << checked.err;

  // Names: what the agent (after a deep check) and the extender serve.
  BackgroundProcess agent({binaryPath("neuron-node-agent"), "--simulate=trn2.48xlarge",
                           "--simulate-dir=" + (dir->path() / "sim").string(),
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0"});
  const auto agentLog = agent.waitForStderr("\"serving HTTP\"", 10s);
  ASSERT_TRUE(agentLog) << agent.stderrText();
  const int agentPort = loggedPort(*agentLog, "\"serving HTTP\"");
  ASSERT_EQ(httpPost(agentPort, "/deep-check", "").value_or("").substr(0, 3), "200");
  BackgroundProcess extender({binaryPath("neuron-scheduler-extender"),
                              "--simulate-cluster=trn2.48xlarge:1", "--listen=127.0.0.1:0"});
  const auto extenderLog = extender.waitForStderr("\"serving\"", 10s);
  ASSERT_TRUE(extenderLog) << extender.stderrText();
  std::set<std::string> exported;
  exportedNames(metricsOf(agentPort), exported);
  exportedNames(metricsOf(loggedPort(*extenderLog, "\"serving\"")), exported);
  ASSERT_GT(exported.count("torus_allocation_info"), 0U);

  std::set<std::string> used;
  for (const std::string& expr : expressions) {
    for (const std::string& name : metricNames(expr)) {
      used.insert(name);
      EXPECT_TRUE(exported.count(name)) << name << " is not exported; in: " << expr;
    }
  }
  // The tokenizer found the metrics (a test that reads nothing would pass anything).
  for (const char* expected : {"torus_allocation_info", "neuroncore_memory_usage_tensors",
                               "torus_extender_request_duration_seconds_bucket",
                               "torus_dra_request_duration_seconds_bucket",
                               "torus_deep_check_failures", "neuron_hardware_info"}) {
    EXPECT_TRUE(used.count(expected)) << expected;
  }
  EXPECT_EQ(metricNames("sum by (le) (rate(no_such_metric{a=\"b\"}[5m])) > 0.5"),
            std::set<std::string>{"no_such_metric"});
  agent.signal(SIGTERM);
  extender.signal(SIGTERM);
  EXPECT_EQ(agent.waitExit(10s), std::optional<int>(0));
  EXPECT_EQ(extender.waitExit(10s), std::optional<int>(0));
}

}  // namespace
}  // namespace torus::testing
