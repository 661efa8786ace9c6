// The deep check's result as people and programs read it: JSON (the agent's /deep-check and
// `neuron-node-agent check --json`) and tables (`neuron-node-agent check`). Pure formatting.
#pragma once

#include <string>
#include <vector>

#include "node-runtime/runtime/deep_check.h"

namespace torus::runtime {

std::string deepCheckJson(const DeepCheckResult& result);
std::string deepCheckTable(const DeepCheckResult& result);
// Every failure, one sentence each, devices first.
std::vector<std::string> deepCheckFailures(const DeepCheckResult& result);

}  // namespace torus::runtime
