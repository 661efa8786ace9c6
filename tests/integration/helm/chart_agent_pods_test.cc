// The chart's node agents as `kubectl neuron top` and `debug` find them: every agent DaemonSet's
// pods carry one of the components kubectl-neuron's selector lists, and run the agent in the
// container named after it (common/contracts/node_agent_pods.h).
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/contracts/node_agent_pods.h"
#include "tests/integration/helm/chart_render.h"

namespace torus::testing {
namespace {

TEST(ChartAgentPods, TheSelectorListsTheTwoAgentComponents) {
  EXPECT_EQ(std::string(contracts::kAgentSelector), std::string(contracts::kComponentLabel) +
                                                        " in (" + contracts::kAgentComponent + "," +
                                                        contracts::kAgentDraComponent + ")");
}

TEST(ChartAgentPods, EveryAgentDaemonSetsPodsMatchKubectlNeuronsSelector) {
  const std::set<std::string> selected = {contracts::kAgentComponent,
                                          contracts::kAgentDraComponent};
  for (const Variant& variant :
       {Variant{"device plugin", {}}, Variant{"device plugin and DRA", {"dra.enabled=true"}}}) {
    std::set<std::string> components;
    for (const YAML::Node& daemonSet : objectsOfKind(render(variant), "DaemonSet")) {
      const YAML::Node pod = daemonSet["spec"]["template"];
      bool runsTheAgent = false, inTheNamedContainer = false;
      for (const YAML::Node& container : pod["spec"]["containers"]) {
        const bool agent = container["command"] && container["command"][0].as<std::string>("") ==
                                                       "/usr/local/bin/neuron-node-agent";
        runsTheAgent = runsTheAgent || agent;
        inTheNamedContainer =
            inTheNamedContainer ||
            (agent && container["name"].as<std::string>("") == contracts::kAgentComponent);
      }
      if (!runsTheAgent) continue;
      const std::string component =
          pod["metadata"]["labels"][contracts::kComponentLabel].as<std::string>("");
      EXPECT_TRUE(selected.contains(component)) << variant.description << ": " << component;
      EXPECT_TRUE(inTheNamedContainer) << variant.description << ": " << component;
      components.insert(component);
    }
    EXPECT_FALSE(components.empty()) << variant.description;
  }
}

}  // namespace
}  // namespace torus::testing
