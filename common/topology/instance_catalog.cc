#include "common/topology/instance_catalog.h"

#include <array>

namespace torus::topology {
namespace {

constexpr std::uint64_t kGiB = 1024ULL * 1024 * 1024;

// Sources: Neuron architecture docs (chips, cores, HBM, interconnect), the driver's address maps
// (NC per device: v1 4, v2 2, v3 8; HBM: v1 2x4 GiB, v2 2x16 GiB, v3 4x24 GiB) and EC2's
// published network figures. LNC exists on Trn2 only; its default there is 2.
// One row per type reads better than clang-format's layout.
// clang-format off
constexpr std::array<InstanceType, 13> kInstanceTypes = {{
    // name            gen                devs cores memory     interconnect           w  lnc max efa  Gbps numa ultra
    {"inf1.xlarge",    Generation::kInf1, 1,   4,    8 * kGiB,  Interconnect::kNone,    0, 1, 1,  0,  25,   1, false},
    {"inf1.2xlarge",   Generation::kInf1, 1,   4,    8 * kGiB,  Interconnect::kNone,    0, 1, 1,  0,  25,   1, false},
    {"inf1.6xlarge",   Generation::kInf1, 4,   4,    8 * kGiB,  Interconnect::kRing,    0, 1, 1,  0,  25,   1, false},
    {"inf1.24xlarge",  Generation::kInf1, 16,  4,    8 * kGiB,  Interconnect::kRing,    0, 1, 1,  1,  100,  2, false},
    {"inf2.xlarge",    Generation::kInf2, 1,   2,    32 * kGiB, Interconnect::kNone,    0, 1, 1,  0,  15,   1, false},
    {"inf2.8xlarge",   Generation::kInf2, 1,   2,    32 * kGiB, Interconnect::kNone,    0, 1, 1,  0,  25,   1, false},
    {"inf2.24xlarge",  Generation::kInf2, 6,   2,    32 * kGiB, Interconnect::kChain,   0, 1, 1,  0,  50,   1, false},
    {"inf2.48xlarge",  Generation::kInf2, 12,  2,    32 * kGiB, Interconnect::kRing,    0, 1, 1,  0,  100,  2, false},
    {"trn1.2xlarge",   Generation::kTrn1, 1,   2,    32 * kGiB, Interconnect::kNone,    0, 1, 1,  0,  12,   1, false},
    {"trn1.32xlarge",  Generation::kTrn1, 16,  2,    32 * kGiB, Interconnect::kTorus2d, 4, 1, 1,  8,  800,  2, false},
    {"trn1n.32xlarge", Generation::kTrn1, 16,  2,    32 * kGiB, Interconnect::kTorus2d, 4, 1, 1,  16, 1600, 2, false},
    {"trn2.48xlarge",  Generation::kTrn2, 16,  8,    96 * kGiB, Interconnect::kTorus2d, 4, 2, 2,  16, 3200, 2, false},
    {"trn2u.48xlarge", Generation::kTrn2, 16,  8,    96 * kGiB, Interconnect::kTorus2d, 4, 2, 2,  16, 3200, 2, true},
}};
// clang-format on

// From the driver: "ND" + device suffix, "NC" + core suffix; inf2 reports NDv3 like trn2.
constexpr ArchitectureNames kInf1Names{"NDv1", "Inf1", "Inferentia", "NCv1", 0x7064};
constexpr ArchitectureNames kTrn1Names{"NDv2", "Trn1", "Trainium1", "NCv2", 0x7164};
constexpr ArchitectureNames kInf2Names{"NDv3", "Inf2", "Inferentia2", "NCv2", 0x7264};
constexpr ArchitectureNames kTrn2Names{"NDv3", "Trn2", "Trainium2", "NCv3", 0x7364};

}  // namespace

std::span<const InstanceType> allInstanceTypes() {
  return kInstanceTypes;
}

const InstanceType* findInstanceType(std::string_view name) {
  if (name.starts_with("ml.")) name.remove_prefix(3);
  for (const InstanceType& type : kInstanceTypes) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

const ArchitectureNames& architectureOf(Generation generation) {
  switch (generation) {
    case Generation::kInf1:
      return kInf1Names;
    case Generation::kTrn1:
      return kTrn1Names;
    case Generation::kInf2:
      return kInf2Names;
    case Generation::kTrn2:
      return kTrn2Names;
  }
  return kTrn2Names;
}

std::string_view generationName(Generation generation) {
  switch (generation) {
    case Generation::kInf1:
      return "inf1";
    case Generation::kTrn1:
      return "trn1";
    case Generation::kInf2:
      return "inf2";
    case Generation::kTrn2:
      return "trn2";
  }
  return "unknown";
}

std::string_view interconnectName(Interconnect interconnect) {
  switch (interconnect) {
    case Interconnect::kNone:
      return "none";
    case Interconnect::kRing:
      return "ring";
    case Interconnect::kChain:
      return "chain";
    case Interconnect::kTorus2d:
      return "torus-2d";
  }
  return "unknown";
}

bool supportsLnc(const InstanceType& type, int lnc) {
  return lnc >= 1 && lnc <= type.maxLnc && type.physicalCoresPerDevice % lnc == 0;
}

}  // namespace torus::topology
