// The deep check's host collectives self-test: one rank per idle device, as threads of this
// process joined by the collectives library over shared memory, run an AllReduce as a ring in
// NeuronLink order (reduce-scatter, then all-gather, each step a send to the next device's rank and
// a receive from the previous one) and every rank checks the sums.
//
// What it measures: this host's collectives path (CPU, memory, the library) with the ranks laid
// out as a job on these devices would be. What it does not: the NeuronLinks themselves, which no
// host thread's traffic crosses; those are the external check command's (check_command.h).
//
// Owns: the communicator and rank threads while it runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace torus::health {

struct HostAllReduceOptions {
  std::size_t bytes = 4 << 20;  // per rank
  std::chrono::milliseconds timeout{10'000};
};

struct HostAllReduce {
  std::optional<double> seconds;  // the slowest rank's time; unset when it failed
  std::string problem;            // the first failure: setup, a transfer, or a wrong sum
};

// `ring`: the devices in ring order (ring_order.h); fewer than two runs nothing.
HostAllReduce runHostAllReduce(std::span<const int> ring, const HostAllReduceOptions& options);

}  // namespace torus::health
