#include "dra-driver/kubelet/slice_content.h"

#include "common/kube/object_fields.h"

namespace torus::dra {
namespace {

using nlohmann::json;

// `extra` holds nothing a default would not: false, 0, "", empty lists and objects, null.
bool isZeroValue(const json& extra) {
  if (extra.is_null()) return true;
  if (extra.is_boolean()) return !extra.get<bool>();
  if (extra.is_number()) return extra == 0;
  if (extra.is_string() || extra.is_array() || extra.is_object()) return extra.empty();
  return false;
}

bool sameContent(const json& stored, const json& ours) {
  if (ours.is_object() && stored.is_object()) {
    for (const auto& [key, value] : ours.items()) {
      const auto found = stored.find(key);
      if (found == stored.end() || !sameContent(*found, value)) return false;
    }
    for (const auto& [key, value] : stored.items()) {
      if (!ours.contains(key) && !isZeroValue(value)) return false;
    }
    return true;
  }
  if (ours.is_array() && stored.is_array()) {
    if (ours.size() != stored.size()) return false;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (!sameContent(stored[i], ours[i])) return false;
    }
    return true;
  }
  return stored == ours;
}

}  // namespace

bool sameSliceContent(const json& stored, const json& published) {
  if (!stored.contains("spec") || !published.contains("spec")) return false;
  json spec = stored["spec"];
  if (spec.contains("pool") && spec["pool"].is_object()) spec["pool"].erase("generation");
  json ours = published["spec"];
  if (ours.contains("pool") && ours["pool"].is_object()) ours["pool"].erase("generation");
  return sameContent(spec, ours);
}

std::string sliceLabel(const json& slice) {
  const std::string name = kube::stringAt(slice, {"metadata", "name"});
  return name.empty() ? kube::stringAt(slice, {"metadata", "generateName"}) + "(dry run)" : name;
}

bool anyDeviceHas(const json& slice, const char* field) {
  const json* devices = slice.contains("spec") && slice["spec"].contains("devices")
                            ? &slice["spec"]["devices"]
                            : nullptr;
  if (devices == nullptr || !devices->is_array()) return false;
  for (const json& device : *devices) {
    if (device.is_object() && device.contains(field)) return true;
  }
  return false;
}

}  // namespace torus::dra
