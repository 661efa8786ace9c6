// runProcess: runs one program to completion and hands back what it wrote and how it ended.
//
// For short helper programs whose output is the answer (a kubeconfig's credential plugin): stdout
// is captured, stderr is captured or left on ours (a plugin that asks the user something must be
// seen), stdin is ours or /dev/null. The child is always reaped, also when reading fails. Not for
// long-running children or ones that need a deadline (see node-runtime's deep-check command).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace torus {

struct ProcessSpec {
  std::vector<std::string> argv;         // argv[0] is looked up on $PATH unless it contains a '/'
  std::vector<std::string> env;          // NAME=value, the whole environment of the child
  bool inheritStdin = false;             // else /dev/null
  bool inheritStderr = false;            // else captured
  std::size_t maxOutputBytes = 1 << 20;  // each of stdout and stderr; the rest is read and dropped
};

struct ProcessOutcome {
  int exitCode = 0;    // when it exited
  int termSignal = 0;  // when a signal ended it (exitCode is then -1)
  std::string out;
  std::string err;  // empty when inherited
};

// NotFound when argv[0] cannot be found or executed; other failures to start are Internal.
Result<ProcessOutcome> runProcess(const ProcessSpec& spec);

// This process's environment as NAME=value strings, for a child that adds to it.
std::vector<std::string> currentEnvironment();

}  // namespace torus
