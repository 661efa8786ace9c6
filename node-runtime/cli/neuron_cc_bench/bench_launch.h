// Starts this run's ranks of a neuron-cc-bench world as forked processes and waits for them:
// binds the root's socket before forking (rank 0 inherits it, no race), passes SIGUSR1 on to
// every rank (each prints its communicator's status), and reports ranks that died.
#pragma once

#include "common/base/result.h"
#include "node-runtime/cli/neuron_cc_bench/bench_config.h"

namespace torus::cli {

// 0 when every rank finished and every check passed, 1 otherwise; an error when the root
// address cannot be bound or a process cannot be forked.
Result<int> launchRanks(const BenchConfig& config);

}  // namespace torus::cli
