// Rendering the chart with the real helm binary, for the chart tests.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {

inline const std::string kChart = std::string(TORUS_SOURCE_DIR) + "/helm/torus";

struct Variant {
  const char* description;
  std::vector<std::string> sets;
};

inline std::vector<std::string> helmArgs(std::vector<std::string> args, const Variant& variant) {
  for (const std::string& set : variant.sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  return args;
}

inline std::vector<YAML::Node> render(const Variant& variant) {
  const ProcessResult result = runProcess(
      helmArgs({TORUS_HELM, "template", "torus", kChart, "--namespace", "kube-system"}, variant));
  EXPECT_EQ(result.exitCode, 0) << variant.description << ": " << result.err;
  std::vector<YAML::Node> objects;
  for (const YAML::Node& document : YAML::LoadAll(result.out)) {
    if (document && !document.IsNull()) objects.push_back(document);
  }
  return objects;
}

// The rendered objects of one kind.
inline std::vector<YAML::Node> objectsOfKind(const std::vector<YAML::Node>& objects,
                                             const std::string& kind) {
  std::vector<YAML::Node> found;
  for (const YAML::Node& object : objects) {
    if (object["kind"].as<std::string>() == kind) found.push_back(object);
  }
  return found;
}

}  // namespace torus::testing
