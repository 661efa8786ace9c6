// Where a driver that reports NeuronLink speeds would put them: one directory per link under the
// device, named after the peer, with the link's trained speed next to the speed it is built for,
// in the words PCIe uses for its own links (current_link_speed, max_link_speed: "32.0 GT/s").
// The reference driver (aws-neuron-driver) has no such files; the deep check reads them where
// they exist and otherwise says link speed was not checked.
// A link that trained below its maximum (fewer lanes or a lower rate after errors) carries data
// proportionally slower, which the deep check reports as a slow link. connected_devices stays
// the list of links that are up; a directory may be missing on drivers that do not report speeds.
#pragma once

#include <filesystem>
#include <string>

namespace torus::discovery {

inline std::filesystem::path neuronLinkDir(const std::filesystem::path& deviceDir, int peer) {
  return deviceDir / "neuron_link" / ("neuron" + std::to_string(peer));
}

inline constexpr const char* kCurrentLinkSpeed = "current_link_speed";
inline constexpr const char* kMaxLinkSpeed = "max_link_speed";

}  // namespace torus::discovery
