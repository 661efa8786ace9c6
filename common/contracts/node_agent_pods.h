// How `kubectl neuron` finds the node agents the chart runs: the component label of the chart's
// agent DaemonSets (helm/torus/templates/_node-agent-daemonset.tpl names the component
// node-agent, or node-agent-dra when the DRA driver runs in the agent) and the agent's container
// name. Whether a labelled pod is an agent at all is the CLI's decision (agent_pods.h).
#pragma once

namespace torus::contracts {

inline constexpr const char* kComponentLabel = "app.kubernetes.io/component";
// The chart's agent components; also the name of the agent's container.
inline constexpr const char* kAgentComponent = "node-agent";
inline constexpr const char* kAgentDraComponent = "node-agent-dra";
// Every agent pod, as a label selector (the two components above).
inline constexpr const char* kAgentSelector =
    "app.kubernetes.io/component in (node-agent,node-agent-dra)";

}  // namespace torus::contracts
