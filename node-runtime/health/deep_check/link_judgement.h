// Link judgement for the deep check: from what the driver reports of each NeuronLink (do both
// ends list each other in connected_devices; at what speed did it train, where the driver has
// link speed files) to a problem that names the pair, or none. Pure apart from readLinkSpeed, so
// every rule is unit-tested on made-up observations.
//
// Only what the driver reports is judged. Nothing here times traffic: host threads' transfers
// never cross a NeuronLink, so their timings said nothing about one (probe review: the deep check
// reported NeuronLink health it had not measured).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "node-runtime/discovery/discovery_roots.h"

namespace torus::health {

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
  std::optional<LinkSpeed> speed;  // the slower end's report; unset when the driver has none
  std::string error;               // its speed files could not be read
};

// Per observation, in order: the problem ("NeuronLink 3-7 ...") or an empty string.
std::vector<std::string> judgeLinks(std::span<const LinkObservation> links);

std::string linkName(int a, int b);  // "NeuronLink 3-7"

}  // namespace torus::health
