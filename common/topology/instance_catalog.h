// The instance catalog: one row per Neuron EC2 instance type, with the facts the rest of Torus
// derives everything else from (device count, cores, memory, interconnect, LNC, network).
//
// Owns: static, immutable facts from AWS's documentation and the Neuron driver's tables.
// Does not own: what a particular node reports (discovery compares the two and reports
// differences) or placement rules (allowed_shapes.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace torus::topology {

// Chip generation as the driver tells it apart (by PCI device id).
enum class Generation { kInf1, kTrn1, kInf2, kTrn2 };

// The names the driver prints under neuronN/info/architecture/ and neuron_coreK/info/architecture/.
struct ArchitectureNames {
  std::string_view archType;      // device arch_type, e.g. "NDv3"
  std::string_view instanceType;  // e.g. "Trn2" (the family, not the EC2 type)
  std::string_view deviceName;    // e.g. "Trainium2"
  std::string_view coreArchType;  // e.g. "NCv3"
  std::uint16_t pciDeviceId;      // vendor 0x1d0f
};

// How the devices of one node are wired by NeuronLink.
enum class Interconnect {
  kNone,     // a single device
  kRing,     // devices 0..n-1 in a cycle (inf1, inf2.48xlarge)
  kChain,    // devices 0..n-1 in a line without wrap (inf2.24xlarge)
  kTorus2d,  // 4x4 torus, row-major ids, wrap in both directions (trn1, trn2)
};

struct InstanceType {
  std::string_view name;  // EC2 name, e.g. "trn2.48xlarge"
  Generation generation;
  int deviceCount;
  int physicalCoresPerDevice;
  std::uint64_t memoryBytesPerDevice;
  Interconnect interconnect;
  int torusWidth;  // devices per row when interconnect is kTorus2d, else 0
  int defaultLnc;  // logical NeuronCore config used when nothing says otherwise
  int maxLnc;      // 1 where LNC is not supported
  int efaInterfaces;
  int networkGbps;
  int numaNodes;         // NUMA nodes of the host the devices are spread over
  bool ultraServerNode;  // one of the 4 nodes of a Trn2 UltraServer (3D torus across nodes)
};

constexpr std::uint16_t kAmazonPciVendorId = 0x1d0f;
constexpr int kUltraServerNodes = 4;

std::span<const InstanceType> allInstanceTypes();
// Finds a type by EC2 name; HyperPod's "ml." prefix is accepted ("ml.trn2.48xlarge").
const InstanceType* findInstanceType(std::string_view name);
const ArchitectureNames& architectureOf(Generation generation);
std::string_view generationName(Generation generation);  // "trn2"
std::string_view interconnectName(Interconnect interconnect);
bool supportsLnc(const InstanceType& type, int lnc);

}  // namespace torus::topology
