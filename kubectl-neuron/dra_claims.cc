#include "kubectl-neuron/dra_claims.h"

#include <algorithm>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/base/text_table.h"
#include "common/contracts/neuron_names.h"
#include "common/kube/object_fields.h"

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

using contracts::kDraDriverName;

std::string text(const json& value) {
  return value.is_string() ? value.get<std::string>() : "";
}

const json& itemsOf(const json& list) {
  static const json kEmpty = json::array();
  const json& items = kube::fieldAt(list, {"items"});
  return items.is_array() ? items : kEmpty;
}

struct ClaimRow {
  std::string nameSpace;
  std::string name;
  std::string node;
  std::vector<std::string> devices;
  std::vector<std::string> pods;
};

struct TaintRow {
  std::string node;
  std::string device;
  std::string taint;
  std::string since;
};

// "neurondevice4,neurondevice5,neurondevice6" -> "neurondevice4-6": a claim of 16 chips fits a
// table cell. Names without a trailing number are kept as they are.
std::string compactNames(const std::vector<std::string>& names) {
  std::map<std::string, std::vector<int>> numbered;
  std::vector<std::string> other;
  for (const std::string& name : names) {
    std::size_t digits = name.size();
    while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9')
      --digits;
    if (digits == name.size() || name.size() - digits > 6) {
      other.push_back(name);
      continue;
    }
    numbered[name.substr(0, digits)].push_back(std::stoi(name.substr(digits)));
  }
  std::vector<std::string> parts;
  for (auto& [prefix, numbers] : numbered) {
    std::sort(numbers.begin(), numbers.end());
    std::string part = prefix;
    for (std::size_t i = 0; i < numbers.size();) {
      std::size_t j = i;
      while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1)
        ++j;
      if (i > 0) part += ",";
      part += std::to_string(numbers[i]);
      if (j > i) part.append(1, '-').append(std::to_string(numbers[j]));
      i = j + 1;
    }
    parts.push_back(std::move(part));
  }
  parts.insert(parts.end(), other.begin(), other.end());
  return joinStrings(parts, " ");
}

}  // namespace

std::string renderClaims(const json& claims, const json& slices, const std::string& namespace_,
                         bool asJson) {
  std::vector<ClaimRow> rows;
  for (const json& claim : itemsOf(claims)) {
    ClaimRow row;
    row.nameSpace = text(kube::fieldAt(claim, {"metadata", "namespace"}));
    row.name = text(kube::fieldAt(claim, {"metadata", "name"}));
    if (!namespace_.empty() && row.nameSpace != namespace_) continue;
    const json& results = kube::fieldAt(claim, {"status", "allocation", "devices", "results"});
    if (!results.is_array()) continue;
    for (const json& result : results) {
      if (text(kube::fieldAt(result, {"driver"})) != kDraDriverName) continue;
      row.node = text(kube::fieldAt(result, {"pool"}));
      row.devices.push_back(text(kube::fieldAt(result, {"device"})));
    }
    if (row.devices.empty()) continue;
    const json& reserved = kube::fieldAt(claim, {"status", "reservedFor"});
    if (reserved.is_array()) {
      for (const json& consumer : reserved) {
        if (text(kube::fieldAt(consumer, {"resource"})) == "pods") {
          row.pods.push_back(text(kube::fieldAt(consumer, {"name"})));
        }
      }
    }
    rows.push_back(std::move(row));
  }
  std::vector<TaintRow> taints;
  for (const json& slice : itemsOf(slices)) {
    if (text(kube::fieldAt(slice, {"spec", "driver"})) != kDraDriverName) continue;
    const json& devices = kube::fieldAt(slice, {"spec", "devices"});
    if (!devices.is_array()) continue;
    for (const json& device : devices) {
      const json& list = kube::fieldAt(device, {"taints"});
      if (!list.is_array()) continue;
      for (const json& taint : list) {
        taints.push_back({text(kube::fieldAt(slice, {"spec", "nodeName"})),
                          text(kube::fieldAt(device, {"name"})),
                          text(kube::fieldAt(taint, {"key"})) + "=" +
                              text(kube::fieldAt(taint, {"value"})) + ":" +
                              text(kube::fieldAt(taint, {"effect"})),
                          text(kube::fieldAt(taint, {"timeAdded"}))});
      }
    }
  }

  if (asJson) {
    json out = {{"claims", json::array()}, {"taintedDevices", json::array()}};
    for (const ClaimRow& row : rows) {
      out["claims"].push_back({{"namespace", row.nameSpace},
                               {"name", row.name},
                               {"node", row.node},
                               {"devices", row.devices},
                               {"pods", row.pods}});
    }
    for (const TaintRow& row : taints) {
      out["taintedDevices"].push_back(
          {{"node", row.node}, {"device", row.device}, {"taint", row.taint}, {"since", row.since}});
    }
    return out.dump(2) + "\n";
  }
  std::string out;
  if (rows.empty()) {
    out += "No ResourceClaims hold neuron.aws.com devices" +
           (namespace_.empty() ? std::string() : " in namespace " + namespace_) + ".\n";
  } else {
    TextTable table({"NAMESPACE", "CLAIM", "NODE", "DEVICES", "PODS"});
    for (const ClaimRow& row : rows) {
      table.addRow({row.nameSpace, row.name, row.node, compactNames(row.devices),
                    row.pods.empty() ? "-" : joinStrings(row.pods, ",")});
    }
    out += table.render();
  }
  if (!taints.empty()) {
    TextTable table({"NODE", "TAINTED DEVICE", "TAINT", "SINCE"});
    for (const TaintRow& row : taints) {
      table.addRow({row.node, row.device, row.taint, row.since.empty() ? "-" : row.since});
    }
    out += "\n" + table.render();
  }
  return out;
}

}  // namespace torus::kubectl_neuron
