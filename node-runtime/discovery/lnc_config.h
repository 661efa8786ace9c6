// LNC (logical NeuronCore config): which value a node runs with and why.
//
// Order: an explicit override (agent config or --lnc) > the node's file
// /opt/aws/neuron/logical_nc_config (a line NEURON_LOGICAL_NC_CONFIG=1|2, written by node user
// data) > the instance type's default (2 on trn2, 1 elsewhere). A bad file is reported and the
// default used, so a typo on the host never takes the node down; a bad override is an error,
// because someone asked for it explicitly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/topology/instance_catalog.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::discovery {

struct LncChoice {
  int lnc = 1;
  std::string source;   // "override", "file <path>", "default for <type>"
  std::string warning;  // set when the file was present but unusable
};

// The value of NEURON_LOGICAL_NC_CONFIG in the file's text; blank lines and # comments allowed.
Result<int> parseLncConfigFile(std::string_view text);

Result<LncChoice> chooseLnc(const DiscoveryRoots& roots, const topology::InstanceType* type,
                            std::optional<int> override);

}  // namespace torus::discovery
