// The names other software sees from the DRA driver: AWS's (`neuron.aws.com`, `neurondevice<N>`,
// the attribute names its ResourceClaimTemplates select on) and ours beyond them (core
// partitions, the health taint, the counters that keep a chip and its cores exclusive). One
// place, so the slice builder, the claim reader, kubelet's plumbing and the chart cannot drift
// apart. They keep the driver's namespace, torus::dra, where every reader of them lives.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/contracts/neuron_names.h"

namespace torus::dra {

inline constexpr std::string_view kDriverName = contracts::kDraDriverName;
// CDI kind of the devices this driver injects: CDI ids read "neuron.aws.com/device=<name>".
inline constexpr std::string_view kCdiKind = "neuron.aws.com/device";
// Opaque configuration (ResourceClaim / DeviceClass `opaque.parameters`): opaque_config.h.

// resourceType attribute values.
inline constexpr std::string_view kTypeDevice = "neuron_device";  // a whole chip (AWS)
inline constexpr std::string_view kTypeNode = "neuron_node";      // a whole UltraServer node (AWS)
inline constexpr std::string_view kTypeCore = "neuron_core";      // one logical core (ours)

// A device's health taint; the value says which kind of fault (a label-style word).
inline constexpr std::string_view kHealthTaintKey = "neuron.aws.com/unhealthy";
// The effects a device taint may have (resource.k8s.io/v1): NoSchedule keeps new claims off the
// device, NoExecute also evicts the pods using it, None only says so (Kubernetes >= 1.37).
inline constexpr std::string_view kTaintEffects[] = {"NoSchedule", "NoExecute", "None"};
bool isTaintEffect(std::string_view effect);

// The one counter set that makes a chip, its cores and the whole node mutually exclusive.
inline constexpr std::string_view kCounterSetName = "neuron-chips";

std::string chipDeviceName(int device);  // "neurondevice3"
std::string coreDeviceName(int core);    // "neuroncore12"
inline constexpr std::string_view kNodeDeviceName = "neuronnode";
std::string chipCounterName(int device);  // "device3"

// What a device name of this driver stands for; nullopt for a name it never publishes.
struct NamedDevice {
  enum class Kind { kChip, kCore, kNode } kind = Kind::kChip;
  int index = 0;  // chip index or global logical core id; 0 for the node
};
std::optional<NamedDevice> parseDeviceName(std::string_view name);

}  // namespace torus::dra
