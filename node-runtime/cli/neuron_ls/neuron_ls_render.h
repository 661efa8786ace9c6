// What neuron-ls prints: a table like AWS's neuron-ls, its JSON (AWS's keys, so scripts written
// for neuron-ls -j keep working), and an ASCII drawing of the NeuronLink ring or torus.
// Pure functions of a Discovery; main.cc does the I/O.
#pragma once

#include <string>

#include "node-runtime/discovery/discover_node.h"

namespace torus::cli {

std::string renderDeviceTable(const discovery::Discovery& discovery);
std::string renderDeviceJson(const discovery::Discovery& discovery);
std::string renderTopology(const discovery::Discovery& discovery);

}  // namespace torus::cli
