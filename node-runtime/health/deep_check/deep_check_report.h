// The deep check's result as people and programs read it: JSON (the agent's /deep-check and
// `neuron-node-agent check --json`) and tables (`neuron-node-agent check`). Pure formatting.
#pragma once

#include <string>
#include <vector>

#include "node-runtime/health/deep_check/deep_check.h"

namespace torus::health {

std::string deepCheckJson(const DeepCheckResult& result);
std::string deepCheckTable(const DeepCheckResult& result);
// Every failure, one sentence each, devices first.
std::vector<std::string> deepCheckFailures(const DeepCheckResult& result);

}  // namespace torus::health
