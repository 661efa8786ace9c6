// The deep check's traffic: one rank per device, as threads of this process joined by the
// collectives library over shared memory. Each NeuronLink is timed on its own (ping-pong between
// its two ends while every other rank waits, so links never compete for the CPU), then an
// AllReduce runs as a ring in NeuronLink order (reduce-scatter, then all-gather, each step a
// send to the next device and a receive from the previous one) and every rank checks the sums.
//
// Owns: the communicators and rank threads while it runs. Does not own: which devices and links
// take part (deep_check.h) or what counts as slow (link_judgement.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace torus::runtime {

struct LinkExerciseOptions {
  std::size_t transferBytes = 1 << 20;   // per ping-pong message
  int attempts = 5;                      // per link; the fastest counts
  std::size_t allReduceBytes = 4 << 20;  // per rank
  std::chrono::milliseconds timeout{10'000};
  bool allReduce = true;  // false: only time the links (a re-measurement)
};

struct LinkTiming {
  int a = 0;
  int b = 0;
  std::optional<double> seconds;  // one-way: half the fastest round trip
  std::string error;
};

struct LinkExercise {
  std::vector<LinkTiming> links;  // in the order asked for
  std::optional<double> allReduceSeconds;
  std::string problem;  // the first failure: communicator setup, a transfer, or a wrong sum
};

// `ring`: the devices in ring order (ring_order.h); `links`: pairs of devices in `ring`.
LinkExercise exerciseLinks(std::span<const int> ring, std::span<const std::pair<int, int>> links,
                           const LinkExerciseOptions& options);

}  // namespace torus::runtime
