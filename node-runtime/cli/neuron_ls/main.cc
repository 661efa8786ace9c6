// neuron-ls: lists the Neuron devices of this node (or of a simulated one) as a table, JSON or
// a NeuronLink drawing. Exit status: 0 ok, 1 discovery failed, 2 bad usage.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/log.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/config/settings.h"
#include "dra-driver/slice_builder.h"
#include "node-runtime/agent/rules/node_metadata.h"
#include "node-runtime/cli/neuron_ls/neuron_ls_render.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/node_source/node_source.h"

namespace {

constexpr const char* kUsage = "neuron-ls [flags]";
constexpr const char* kDescription =
    "Lists the Neuron devices of this node: cores and their global ids (as used in\n"
    "NEURON_RT_VISIBLE_CORES), memory, NeuronLink neighbours, PCI address, NUMA node and\n"
    "health, read from the Neuron driver's sysfs. With --simulate, writes a simulated\n"
    "driver tree first and reads that instead.\n\n"
    "Examples:\n"
    "  neuron-ls\n"
    "  neuron-ls --simulate=trn2.48xlarge --json\n"
    "  neuron-ls --simulate=inf2.48xlarge --topology\n"
    "  neuron-ls --simulate=trn2.48xlarge --node-metadata   # labels + torus.dev/topology\n"
    "  neuron-ls --simulate=trn2.48xlarge --resource-slices=node-a   # what the DRA driver "
    "publishes\n"
    "  neuron-ls --simulate=trn2.48xlarge --simulate-fault=ecc:3 --simulate-fault=probe-fail:5";

struct Options {
  bool json = false;
  bool topology = false;
  bool nodeMetadata = false;
  std::string resourceSlicesFor;
  bool draCoreDevices = true;
  torus::node_source::NodeSourceOptions source;
  torus::log::Settings log{torus::log::Level::kWarn, 0, torus::log::Format::kText};
};

}  // namespace

int main(int argc, char** argv) {
  Options options;
  torus::config::SettingTable table("neuron-ls");
  table.addSwitch("json", "", "", "print JSON (neuron-ls -j keys) instead of a table",
                  &options.json);
  table.addSwitch("topology", "", "", "draw the NeuronLink ring or torus", &options.topology);
  table.addSwitch("node-metadata", "", "",
                  "print the labels and annotations the node agent publishes on this node's Node "
                  "(JSON)",
                  &options.nodeMetadata);
  table.addString("resource-slices", "", "", "NODE",
                  "print the ResourceSlices the DRA driver would publish for this node under that "
                  "node name (a JSON List, for kubectl create)",
                  &options.resourceSlicesFor);
  table.addSwitch("dra-core-devices", "", "",
                  "--resource-slices: publish single NeuronCores as partitions, as the agent's "
                  "--dra-core-devices",
                  &options.draCoreDevices);
  torus::node_source::addNodeSourceSettings(table, &options.source);
  torus::config::addLogSettings(table, &options.log);

  const torus::config::CommandInfo info{"neuron-ls", kUsage, kDescription, ""};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  torus::log::configure(options.log);

  auto prepared = torus::node_source::prepareNode(options.source);
  if (!prepared) {
    std::fprintf(stderr, "neuron-ls: %s\n", prepared.error().message.c_str());
    return prepared.error().code == torus::ErrorCode::kInvalidArgument ? 2 : 1;
  }
  auto discovery = torus::discovery::discoverNode(
      prepared->roots, torus::node_source::discoveryOptionsOf(options.source));
  if (!discovery) {
    std::fprintf(stderr, "neuron-ls: %s\n", discovery.error().message.c_str());
    return discovery.error().code == torus::ErrorCode::kInvalidArgument ? 2 : 1;
  }
  std::string out;
  if (!options.resourceSlicesFor.empty()) {
    torus::dra::SliceInputs inputs;
    inputs.nodeName = options.resourceSlicesFor;
    inputs.node = discovery->node;
    inputs.options.coreDevices = options.draCoreDevices;
    out =
        nlohmann::json{
            {"apiVersion", "v1"}, {"kind", "List"}, {"items", torus::dra::buildSlices(inputs, 1)}}
            .dump() +
        "\n";
  } else if (options.nodeMetadata) {
    const torus::agent::NodeMetadata metadata = torus::agent::nodeMetadata(discovery->node);
    out =
        nlohmann::json{{"labels", metadata.labels}, {"annotations", metadata.annotations}}.dump(2) +
        "\n";
  } else if (options.json) {
    out = torus::cli::renderDeviceJson(*discovery);
  } else if (options.topology) {
    out = torus::cli::renderTopology(*discovery);
  } else {
    out = torus::cli::renderDeviceTable(*discovery);
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
