// Link judgement for the deep check: from what was observed on each NeuronLink (is it up, at what
// speed did it train, how long did a transfer over it take) to a problem that names the pair, or
// none. Pure apart from readLinkSpeed, so every rule is unit-tested on made-up observations.
//
// A link is slow when it trained below its maximum speed, or when a transfer over it takes
// `factor` times the median of the node's other links and at least `minimumExcess` longer: links
// of one node are built alike, so the others are the baseline. The floor is high (50 ms) on
// purpose: the timed transfers run on host threads, and on a busy 2-core node a descheduled
// thread made healthy links look 25-60x slower (1-2 ms) even after re-timing, which must never
// take a device out of service. Timings below the floor are reported (metrics, the table), not
// judged; the trained speed is the hard evidence.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::runtime {

struct LinkSpeed {
  double current = 0;  // GT/s as the driver prints it
  double max = 0;
  std::string file;  // the current_link_speed file, for messages
};

// "32.0 GT/s" -> 32.0
Result<double> parseLinkSpeed(std::string_view text);
// The speed neuron<device> reports for its link to neuron<peer>; nullopt when the driver reports
// none for that link.
Result<std::optional<LinkSpeed>> readLinkSpeed(const discovery::DiscoveryRoots& roots, int device,
                                               int peer);

struct LinkObservation {
  int a = 0;
  int b = 0;
  bool up = true;                  // both ends list each other in connected_devices
  std::optional<LinkSpeed> speed;  // the slower end's report
  std::optional<double> seconds;   // one transfer over the link, fastest of the attempts
  std::string error;               // the transfer failed
};

struct SlowLinkPolicy {
  double factor = 3.0;
  std::chrono::microseconds minimumExcess{50'000};
};

// Per observation, in order: the problem ("NeuronLink 3-7 ...") or an empty string.
std::vector<std::string> judgeLinks(std::span<const LinkObservation> links,
                                    const SlowLinkPolicy& policy);

std::string linkName(int a, int b);  // "NeuronLink 3-7"

}  // namespace torus::runtime
