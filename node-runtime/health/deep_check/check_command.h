// The deep check's external check: a command the operator configures (--deep-check-command), such
// as the Neuron runtime's collective self-test (nccom-test), which does drive the NeuronLinks.
// Run through /bin/sh with a deadline; exit 0 is a pass. It is told which devices it may use:
//
//   TORUS_DEEP_CHECK_DEVICES   the idle devices, "0,1,5"
//   TORUS_DEEP_CHECK_RING      the same in NeuronLink ring order, "0 1 5"
//   NEURON_RT_VISIBLE_CORES    their NeuronCores, "0-3,20-23" (what the Neuron runtime reads)
//
// Owns: the child (its process group is killed at the deadline) and the pipe of its output.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace torus::health {

struct CommandOutcome {
  bool passed = false;
  int exitCode = -1;  // -1: killed (deadline) or could not start
  double seconds = 0;
  std::string output;   // stdout and stderr, the last kOutputLimit bytes
  std::string problem;  // why it failed, naming the command
};

inline constexpr std::size_t kCommandOutputLimit = 4096;

CommandOutcome runCheckCommand(const std::string& command,
                               const std::map<std::string, std::string>& environment,
                               std::chrono::milliseconds deadline);

}  // namespace torus::health
