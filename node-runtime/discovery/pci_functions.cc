#include "node-runtime/discovery/pci_functions.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/driver_bdf_query.h"
#include "node-runtime/discovery/kernel_ring.h"
#include "node-runtime/discovery/pci_map_record.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::discovery {
namespace {

std::string deviceList(const std::vector<int>& indices) {
  std::vector<std::string> names;
  for (const int index : indices)
    names.push_back("neuron" + std::to_string(index));
  return joinStrings(names, ", ");
}

std::vector<int> unplaced(const NeuronPciMap& map, const std::vector<int>& indices) {
  std::vector<int> missing;
  for (const int index : indices) {
    if (!map.functionOf.contains(index)) missing.push_back(index);
  }
  return missing;
}

// inf1's PCI device ids (neuron_device.h:36-39): the v1 driver numbers its devices by a probe
// counter (neuron_pci.c:256-258; v1's get_device_id does nothing), and logs no load line.
bool allInf1(const DiscoveryRoots& roots, const std::vector<std::string>& bound) {
  if (bound.empty()) return false;
  for (const std::string& function : bound) {
    auto id = readSmallFile(roots.sys / "bus" / "pci" / "devices" / function / "device", 64);
    if (!id) return false;
    const std::string_view text = trim(*id);
    if (text != "0x7064" && text != "0x7065" && text != "0x7066" && text != "0x7067") return false;
  }
  return true;
}

// inf1 without the ioctl: the probe counter numbers the functions in the order the PCI core
// offers them, which is address order, so the Nth bound function is neuronN when the driver
// numbered every bound function and no other (one each, indices 0..N-1 with no gap).
NeuronPciMap probeOrderOfInf1(const DiscoveryRoots& roots, const std::vector<std::string>& bound,
                              const std::vector<int>& indices) {
  NeuronPciMap map;
  const bool dense = !indices.empty() && indices.back() + 1 == static_cast<int>(indices.size());
  if (!dense || bound.size() != indices.size() || !allInf1(roots, bound)) return map;
  for (const int index : indices)
    map.functionOf.emplace(index, bound[static_cast<std::size_t>(index)]);
  map.source = "probe order (inf1)";
  return map;
}

NeuronPciMap placeFunctions(const DiscoveryRoots& roots, const std::vector<std::string>& bound,
                            const std::vector<int>& indices);

// With a state directory: a complete map from the driver's own answer is recorded there, and a map
// the driver can no longer give in full (its load lines gone from the ring, no ioctl) is completed
// from the record of this boot and these functions. Where the two differ the driver's answer now
// wins and the difference is a finding.
void keepOrRecall(const DiscoveryRoots& roots, const std::vector<std::string>& bound,
                  const std::vector<int>& indices, NeuronPciMap& map) {
  const std::filesystem::path file = roots.pciMapRecord();
  const std::string bootId = currentBootId();
  const bool fromDriver = map.source == "driver ioctl" || map.source == "kernel log";
  if (unplaced(map, indices).empty()) {
    if (!fromDriver || bootId.empty()) return;
    const PciMapRecord record{bootId, map.source, bound, map.functionOf};
    if (auto kept = readPciMapRecord(file, bootId, bound);
        kept && kept->functionOf == record.functionOf) {
      return;
    }
    if (auto written = writePciMapRecord(file, record); !written) {
      TORUS_LOG(Warn, Discovery, "cannot keep the PCI map for a later restart",
                {"file", file.string()}, {"error", written.error().message});
    }
    return;
  }
  const std::optional<PciMapRecord> kept = readPciMapRecord(file, bootId, bound);
  if (!kept) return;
  for (const int index : indices) {
    const auto recorded = kept->functionOf.find(index);
    if (recorded == kept->functionOf.end()) continue;
    const auto [said, added] = map.functionOf.emplace(index, recorded->second);
    if (!added && said->second != recorded->second) {
      map.findings.push_back("neuron" + std::to_string(index) + ": the driver places it at " +
                             said->second + ", the map kept earlier in this boot at " +
                             recorded->second + "; using the driver's answer");
    }
  }
  map.source = map.source.empty() ? "kept map (" + kept->source + ", this boot)"
                                  : map.source + " and kept map (" + kept->source + ")";
}

}  // namespace

bool isPciAddress(std::string_view text) {
  constexpr std::string_view kShape = "xxxx:xx:xx.x";
  if (text.size() != kShape.size() || text.back() > '7') return false;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const char c = text[i];
    const bool hex = std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
    if (kShape[i] == 'x' ? !hex : c != kShape[i]) return false;
  }
  return true;
}

std::vector<std::string> neuronPciFunctions(const DiscoveryRoots& roots) {
  std::vector<std::string> functions;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(roots.neuronPciDriver(), ec)) {
    std::string name = entry.path().filename().string();
    if (isPciAddress(name)) functions.push_back(std::move(name));
  }
  std::sort(functions.begin(), functions.end());
  return functions;
}

std::optional<DriverProbeLine> parseDriverProbeLine(std::string_view line) {
  constexpr std::string_view kMarker = "** BDF: ";
  const std::size_t at = line.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  // "%2.2x:%2.2x.%x => nd[%d] (routing id: %u)" (v2/neuron_dhal_v2.c:1102).
  const std::string tail(line.substr(at + kMarker.size(), 64));
  unsigned bus = 0;
  unsigned slot = 0;
  unsigned function = 0;
  int index = -1;
  unsigned routing = 0;
  int consumed = 0;
  if (std::sscanf(tail.c_str(), "%2x:%2x.%1x => nd[%d] (routing id: %u)%n", &bus, &slot, &function,
                  &index, &routing, &consumed) != 5 ||
      consumed == 0 || index < 0 || index > 63 || slot > 0x1f || function > 7) {
    return std::nullopt;
  }
  char text[16];
  std::snprintf(text, sizeof(text), "%02x:%02x.%x", bus, slot, function);
  return DriverProbeLine{text, index, static_cast<int>(routing)};
}

NeuronPciMap mapFromDriverLog(std::string_view log, const std::vector<std::string>& bound,
                              const std::vector<int>& indices) {
  std::map<int, std::string> byIndex;
  std::map<std::string, int> byFunction;
  std::set<std::string> ambiguous;
  for (const std::string_view line : splitAndTrim(log, '\n')) {
    const auto probe = parseDriverProbeLine(line);
    if (!probe) continue;
    std::vector<std::string> matches;
    for (const std::string& function : bound) {
      if (std::string_view(function).substr(5) == probe->busSlotFunction) {
        matches.push_back(function);
      }
    }
    // Not bound here: another kernel's device (a test bed's nodes share one log) or a function
    // the driver no longer holds. Bound in several PCI domains: the line cannot say which.
    if (matches.size() > 1) ambiguous.insert(probe->busSlotFunction);
    if (matches.size() != 1) continue;
    const std::string& function = matches.front();
    if (const auto old = byFunction.find(function); old != byFunction.end()) {
      byIndex.erase(old->second);
    }
    if (const auto old = byIndex.find(probe->index); old != byIndex.end()) {
      byFunction.erase(old->second);
    }
    byIndex[probe->index] = function;
    byFunction[function] = probe->index;
  }
  NeuronPciMap map;
  for (const int index : indices) {
    if (const auto found = byIndex.find(index); found != byIndex.end()) {
      map.functionOf.emplace(index, found->second);
    }
  }
  if (!map.functionOf.empty()) map.source = "kernel log";
  for (const std::string& function : ambiguous) {
    map.findings.push_back("the driver's load line for " + function +
                           " matches functions in several PCI domains; it places no device");
  }
  return map;
}

NeuronPciMap mapNeuronPciFunctions(const DiscoveryRoots& roots, const std::vector<int>& indices) {
  if (indices.empty()) return {};
  const std::vector<std::string> bound = neuronPciFunctions(roots);
  // The driver numbers its devices once, while loading: as long as the same functions are bound
  // and the same devices listed, the map found before still holds, and it must, since the kernel
  // ring drops the load lines in time. A complete map is kept per sysfs root.
  std::string key = roots.dev.string() + "|";
  for (const std::string& function : bound)
    key += function + ",";
  for (const int index : indices)
    key += std::to_string(index) + ",";
  static std::mutex cacheMutex;
  static std::map<std::string, std::pair<std::string, NeuronPciMap>> cache;
  {
    std::lock_guard lock(cacheMutex);
    const auto cached = cache.find(roots.sys.string());
    if (cached != cache.end() && cached->second.first == key) return cached->second.second;
  }
  NeuronPciMap map = placeFunctions(roots, bound, indices);
  if (map.functionOf.size() == indices.size()) {
    std::lock_guard lock(cacheMutex);
    cache[roots.sys.string()] = {std::move(key), map};
  }
  return map;
}

namespace {

NeuronPciMap placeFunctions(const DiscoveryRoots& roots, const std::vector<std::string>& bound,
                            const std::vector<int>& indices) {
  NeuronPciMap map;
  const auto isBound = [&bound](const std::string& function) {
    return std::binary_search(bound.begin(), bound.end(), function);
  };
  std::string ioctlProblem;
  auto asked = queryDriverBdfs(roots.deviceNode(indices.front()), indices.front(), indices);
  if (asked) {
    for (auto& [index, function] : *asked) {
      if (isBound(function)) {
        map.functionOf.emplace(index, std::move(function));
      } else {
        map.findings.push_back("the driver places neuron" + std::to_string(index) + " at " +
                               function + ", which is not bound under " +
                               roots.neuronPciDriver().string());
      }
    }
    if (!map.functionOf.empty()) map.source = "driver ioctl";
  } else {
    ioctlProblem = asked.error().message;
  }

  NeuronPciMap logged;
  std::string logProblem;
  if (auto log = readKernelLogOnce(roots.kernelLog())) {
    logged = mapFromDriverLog(*log, bound, indices);
    if (logged.functionOf.empty()) logProblem = "it holds no driver load line for these devices";
  } else {
    logProblem = log.error().message;
  }
  for (std::string& finding : logged.findings)
    map.findings.push_back(std::move(finding));

  if (map.source.empty() && logged.functionOf.empty()) {
    NeuronPciMap probed = probeOrderOfInf1(roots, bound, indices);
    map.functionOf = std::move(probed.functionOf);
    map.source = std::move(probed.source);
  } else if (map.source.empty()) {
    map.functionOf = std::move(logged.functionOf);
    map.source = std::move(logged.source);
  } else {
    for (const auto& [index, function] : logged.functionOf) {
      const auto said = map.functionOf.find(index);
      if (said != map.functionOf.end() && said->second != function) {
        map.findings.push_back("neuron" + std::to_string(index) + ": the driver places it at " +
                               said->second + ", its load line in the kernel log at " + function +
                               "; using the driver's answer");
      }
    }
  }
  if (!roots.stateDir.empty()) keepOrRecall(roots, bound, indices, map);
  if (const std::vector<int> missing = unplaced(map, indices); !missing.empty()) {
    map.findings.push_back(
        "no PCI function is known for " + deviceList(missing) +
        ": no pciBusID, pcieRoot or NUMA node for them, and their memory is not tested (driver "
        "ioctl: " +
        (ioctlProblem.empty() ? "no answer for them" : ioctlProblem) + "; kernel log " +
        roots.kernelLog().string() + ": " +
        (logProblem.empty() ? "no load line for them" : logProblem) + ")");
  }
  return map;
}

}  // namespace

std::string pcieRootOf(const DiscoveryRoots& roots, const std::string& bdf) {
  if (!isPciAddress(bdf)) return "";
  std::error_code ec;
  const std::filesystem::path link = roots.sys / "bus" / "pci" / "devices" / bdf;
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (ec) return "";
  if (target.is_relative()) target = (link.parent_path() / target).lexically_normal();
  // .../devices/pciDDDD:BB/.../<bdf>: the component after the last "devices" before a pci root.
  const std::filesystem::path relative = target.lexically_relative(roots.sys / "devices");
  if (relative.empty() || target.filename() != bdf) return "";
  const std::string root = relative.begin()->string();
  return root.starts_with("pci") && root.size() > 3 ? root : "";
}

std::optional<int> numaNodeOfFunction(const std::filesystem::path& function) {
  auto numa = readParsed(function / "numa_node", "numa_node",
                         [](std::string_view text) { return parseInt(text, -1, 1023); });
  if (!numa || *numa < 0) return std::nullopt;
  return *numa;
}

}  // namespace torus::discovery

namespace torus::discovery {

std::string cpuListOfFunction(const std::filesystem::path& function) {
  auto text = readSmallFile(function / "local_cpulist", 4096);
  return text ? std::string(trim(*text)) : std::string();
}

}  // namespace torus::discovery
