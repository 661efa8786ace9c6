#include "common/contracts/dra_names.h"

namespace torus::dra {

std::string chipDeviceName(int device) {
  return "neurondevice" + std::to_string(device);
}

std::string coreDeviceName(int core) {
  return "neuroncore" + std::to_string(core);
}

std::string chipCounterName(int device) {
  return "device" + std::to_string(device);
}

bool isTaintEffect(std::string_view effect) {
  for (const std::string_view known : kTaintEffects) {
    if (effect == known) return true;
  }
  return false;
}

namespace {

// The decimal index after `prefix`, without sign, leading zeros or trailing text.
std::optional<int> indexAfter(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 4 || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  int value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

std::optional<NamedDevice> parseDeviceName(std::string_view name) {
  if (name == kNodeDeviceName) return NamedDevice{NamedDevice::Kind::kNode, 0};
  if (auto chip = indexAfter(name, "neurondevice")) {
    return NamedDevice{NamedDevice::Kind::kChip, *chip};
  }
  if (auto core = indexAfter(name, "neuroncore")) {
    return NamedDevice{NamedDevice::Kind::kCore, *core};
  }
  return std::nullopt;
}

}  // namespace torus::dra
