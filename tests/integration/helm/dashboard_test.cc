// The chart's Grafana dashboard: its ConfigMap carries the sidecar's label, every PromQL
// expression parses (promtool check rules) and names only metrics the project exports — read
// from the running agent's and extender's /metrics, not from a list kept by hand.
#include <cctype>
#include <set>
#include <sstream>

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

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

// Grafana's variables, as Prometheus would see them once substituted.
std::string substituted(const std::string& expr) {
  return replaceAll(replaceAll(expr, "$__rate_interval", "5m"), "$node", ".*");
}

bool identifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool identifierChar(char c) {
  return identifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

// Skips from an opening `open` at `at` past its matching `close`, stepping over strings.
std::size_t skipGroup(const std::string& expr, std::size_t at, char open, char close) {
  int depth = 0;
  for (; at < expr.size(); ++at) {
    if (expr[at] == '"') {
      for (++at; at < expr.size() && expr[at] != '"'; ++at) {
        if (expr[at] == '\\') ++at;
      }
    } else if (expr[at] == open) {
      ++depth;
    } else if (expr[at] == close && --depth == 0) {
      return at + 1;
    }
  }
  return at;
}

// The metric names an expression reads: identifiers that are not functions, grouping clauses,
// keywords, label matchers, ranges, strings or numbers.
std::set<std::string> metricNames(const std::string& expr) {
  static const std::set<std::string> kGrouping = {"by",       "without",    "on",
                                                  "ignoring", "group_left", "group_right"};
  // Keywords, and aggregation operators (which may be followed by `by (...)` before their "(").
  static const std::set<std::string> kKeywords = {
      "and",   "or",     "unless", "bool",  "offset",       "sum",     "min",  "max",     "avg",
      "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"};
  std::set<std::string> names;
  std::size_t at = 0;
  while (at < expr.size()) {
    const char c = expr[at];
    if (c == '"') {
      for (++at; at < expr.size() && expr[at] != '"'; ++at) {
        if (expr[at] == '\\') ++at;
      }
      ++at;  // the closing quote
    } else if (c == '{') {
      at = skipGroup(expr, at, '{', '}');
    } else if (c == '[') {
      at = skipGroup(expr, at, '[', ']');
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (at < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[at])) ||
                                  expr[at] == '.' || expr[at] == '+' || expr[at] == '-')) {
        ++at;
      }
    } else if (identifierStart(c)) {
      const std::size_t begin = at;
      while (at < expr.size() && identifierChar(expr[at]))
        ++at;
      const std::string word = expr.substr(begin, at - begin);
      std::size_t next = at;
      while (next < expr.size() && std::isspace(static_cast<unsigned char>(expr[next])))
        ++next;
      const bool call = next < expr.size() && expr[next] == '(';
      if (call && kGrouping.count(word) != 0) {
        at = skipGroup(expr, next, '(', ')');
      } else if (!call && kKeywords.count(word) == 0) {
        names.insert(word);
      }
    } else {
      ++at;
    }
  }
  return names;
}

// Every sample name a /metrics exposes, from its TYPE lines (families without samples too).
void exportedNames(const std::string& text, std::set<std::string>& names) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string hash, type, name, kind;
    if (!(words >> hash >> type >> name >> kind) || hash != "#" || type != "TYPE") continue;
    names.insert(name);
    if (kind == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"})
        names.insert(name + suffix);
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
    // label_values(METRIC, LABEL): the metric is an expression of its own.
    const std::string definition = variable.value("definition", "");
    const std::string prefix = "label_values(";
    if (definition.rfind(prefix, 0) == 0 && definition.find(',') != std::string::npos) {
      expressions.push_back(definition.substr(prefix.size(), definition.find(',') - prefix.size()));
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
                           "--device-plugin=false", "--metrics-addr=127.0.0.1:0",
                           "--admin-addr=127.0.0.1:0"});
  const auto agentLog = agent.waitForStderr("\"serving admin HTTP\"", 10s);
  ASSERT_TRUE(agentLog) << agent.stderrText();
  const int agentPort = loggedPort(*agentLog, "\"serving HTTP\"");
  const int adminPort = loggedPort(*agentLog, "\"serving admin HTTP\"");
  ASSERT_EQ(httpPost(adminPort, "/deep-check", "").value_or("").substr(0, 3), "200");
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
