#include "node-runtime/simulator/sim_fault.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <system_error>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/topology/instance_catalog.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/discovery/neuronlink_attributes.h"
#include "node-runtime/discovery/sysfs_attribute.h"
#include "node-runtime/simulator/sim_instance.h"
#include "node-runtime/simulator/sim_pci_layout.h"
#include "node-runtime/simulator/sim_reset.h"

namespace torus::simulator {
namespace {

namespace fs = std::filesystem;

constexpr int kSlowResetMillis = 3000;

Error badFault(std::string_view text, std::string_view why) {
  return makeError(ErrorCode::kInvalidArgument,
                   "fault " + quoteJsonString(text) + ": " + std::string(why) +
                       " (known: device-node-missing:N, garble:N:ATTR, ecc:N[:COUNT], "
                       "ecc-repairable:N[:COUNT], probe-fail:N, link-cut:A-B, "
                       "slow-link:A-B[:FACTOR], mem-corrupt:N, reset-slow:N[:MS], "
                       "reset-fail:N[:MS])");
}

fs::path deviceDir(const fs::path& root, int device) {
  return discovery::DiscoveryRoots::under(root).sys / "devices" / "virtual" / "neuron_device" /
         ("neuron" + std::to_string(device));
}

// The generation of the tree's instance type (its DMI product name).
std::optional<topology::Generation> simulatedGeneration(const fs::path& root) {
  auto product = readSmallFile(discovery::DiscoveryRoots::under(root).dmiProductName(), 256);
  if (!product) return std::nullopt;
  auto instance = simulatedInstance(trim(*product));
  if (!instance) return std::nullopt;
  return instance->type.generation;
}

// The simulator's PCI function of neuronN, where the layout of the tree's instance type (its DMI
// product name) puts it.
Result<fs::path> pciFunction(const fs::path& root, int device) {
  const discovery::DiscoveryRoots roots = discovery::DiscoveryRoots::under(root);
  auto product = readSmallFile(roots.dmiProductName(), 256);
  if (!product) return std::move(product).error().withContext("the simulated instance type");
  auto instance = simulatedInstance(trim(*product));
  const SimulatedPciLayout layout =
      instance ? simulatedPciLayout(instance->type) : SimulatedPciLayout{};
  const SimulatedNeuronFunction* function = layout.functionOfDevice(device);
  // The tree's functions may sit in another PCI domain than the layout's default one.
  const std::string busSlotFunction =
      function != nullptr ? function->bdf.substr(function->bdf.find(':') + 1) : "";
  std::error_code ec;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(roots.sys / "bus" / "pci" / "devices", ec)) {
    const std::string name = entry.path().filename().string();
    if (!busSlotFunction.empty() && name.ends_with(":" + busSlotFunction)) return entry.path();
  }
  return makeError(ErrorCode::kNotFound,
                   "the simulated node has no PCI function for neuron" + std::to_string(device));
}

Result<void> removeLink(const fs::path& root, int from, int to) {
  const fs::path path = deviceDir(root, from) / "connected_devices";
  auto text = readSmallFile(path);
  if (!text) return std::move(text).error();
  auto links = discovery::parseConnectedDevices(*text);
  if (!links) return std::move(links).error().withContext(path.string());
  std::string rewritten;
  for (const int link : *links) {
    if (link == to) continue;
    if (!rewritten.empty()) rewritten += ", ";
    rewritten += std::to_string(link);
  }
  TORUS_RETURN_IF_ERROR(writeFile(path, rewritten + "\n"), "link-cut");
  // A link that is down has no trained speed either.
  std::error_code ec;
  fs::remove_all(discovery::neuronLinkDir(deviceDir(root, from), to), ec);
  return okResult();
}

Result<void> slowLink(const fs::path& root, int from, int to, int slowdown) {
  const fs::path link = discovery::neuronLinkDir(deviceDir(root, from), to);
  // A simulated driver reports link speeds only where a link is slowed (sim_tree.h).
  if (std::error_code ec; !fs::exists(link / discovery::kMaxLinkSpeed, ec)) {
    TORUS_RETURN_IF_ERROR(writeFile(link / discovery::kMaxLinkSpeed, "32.0 GT/s\n"), "slow-link");
  }
  auto max = readSmallFile(link / discovery::kMaxLinkSpeed);
  if (!max) return std::move(max).error();
  double speed = 0;
  char unit[16] = {};
  if (std::sscanf(max->c_str(), "%lf %15s", &speed, unit) != 2) {
    return makeError(ErrorCode::kInternal, (link / discovery::kMaxLinkSpeed).string() +
                                               ": expected \"<number> GT/s\", got " +
                                               quoteJsonString(*max));
  }
  char text[48];
  std::snprintf(text, sizeof(text), "%.1f %s\n", speed / slowdown, unit);
  return writeFile(link / discovery::kCurrentLinkSpeed, text);
}

// Gives resource4_wc its own storage: what is written through it no longer reaches what
// resource4 reads, so the device reads back stale memory.
Result<void> corruptMemory(const fs::path& root, int device) {
  auto function = pciFunction(root, device);
  if (!function) return std::move(function).error();
  const fs::path bar = *function / "resource4";
  const fs::path writeView = *function / "resource4_wc";
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(bar, ec);
  if (!ec) fs::remove(writeView, ec);
  if (ec) return makeError(ErrorCode::kInternal, bar.string() + ": " + ec.message());
  TORUS_RETURN_IF_ERROR(writeFile(writeView, ""), "mem-corrupt");
  fs::resize_file(writeView, bytes, ec);
  if (ec) return makeError(ErrorCode::kInternal, writeView.string() + ": " + ec.message());
  return okResult();
}

// A device whose probe failed before the driver counted it (pci_enable_device refused:
// neuron_pci.c:207-211, before the count at :256): its function stays on the bus but unbound, it
// has no index (no class device, no /dev node, no "** BDF" line, only pci_info's "Can't enable
// the device"), and since the driver fills the connected_devices table only when it counted a
// full set of devices at load (neuron_pci.c:385; v2/neuron_dhal_v2.c:700-720,
// v3/neuron_dhal_v3.c:916-940), every other device lists none.
Result<void> failProbe(const fs::path& root, int device) {
  const discovery::DiscoveryRoots roots = discovery::DiscoveryRoots::under(root);
  const std::string name = "neuron" + std::to_string(device);
  std::error_code ec;
  auto function = pciFunction(root, device);
  if (function) {
    const std::string bdf = function->filename().string();
    fs::remove(roots.sys / "bus" / "pci" / "drivers" / "neuron-driver" / bdf, ec);
    auto log = readSmallFile(roots.kernelLog(), 64 * 1024 * 1024);
    if (log) {
      std::string kept;
      for (const std::string_view line : splitAndTrim(*log, '\n')) {
        if (line.empty()) continue;
        if (line.find("** BDF: " + bdf.substr(5) + " ") != std::string_view::npos) {
          // dev_printk's prefix: the driver's name and the device's (KERN_INFO).
          kept += "6,0,4000000,-;neuron-driver " + bdf + ": Can't enable the device\n";
          continue;
        }
        kept.append(line).append("\n");
      }
      TORUS_RETURN_IF_ERROR(writeFile(roots.kernelLog(), kept), "probe-fail");
    }
  }
  fs::remove(roots.neuronClass() / name, ec);
  fs::remove_all(deviceDir(root, device), ec);
  fs::remove(roots.deviceNode(device), ec);
  for (const fs::directory_entry& entry : fs::directory_iterator(roots.neuronClass(), ec)) {
    const fs::path links = entry.path() / "connected_devices";
    if (fs::exists(links, ec)) TORUS_RETURN_IF_ERROR(writeFile(links, "\n"), "probe-fail");
  }
  return okResult();
}

}  // namespace

bool inventedByTheSimulator(const Fault& fault) {
  return fault.kind == FaultKind::kLinkCut || fault.kind == FaultKind::kSlowLink;
}

Result<Fault> parseFault(std::string_view text) {
  const std::vector<std::string_view> parts = splitAndTrim(text, ':');
  if (parts.size() < 2) return badFault(text, "expected KIND:ARGS");
  Fault fault;
  const std::string_view kind = parts[0];
  if (kind == "link-cut" || kind == "slow-link") {
    const bool slow = kind == "slow-link";
    const std::vector<std::string_view> ends = splitAndTrim(parts[1], '-');
    if (ends.size() != 2 || parts.size() > (slow ? 3U : 2U)) {
      return badFault(text, slow ? "expected slow-link:A-B[:FACTOR]" : "expected link-cut:A-B");
    }
    auto a = parseInt(ends[0], 0, discovery::kMaxDevices - 1);
    auto b = parseInt(ends[1], 0, discovery::kMaxDevices - 1);
    if (!a || !b || *a == *b) return badFault(text, "expected two different device indices");
    fault.kind = slow ? FaultKind::kSlowLink : FaultKind::kLinkCut;
    fault.device = *a;
    fault.otherDevice = *b;
    if (parts.size() == 3) {
      auto factor = parseInt(parts[2], 2, 1000);
      if (!factor) return badFault(text, "expected a slowdown FACTOR in [2, 1000]");
      fault.slowdown = *factor;
    }
    return fault;
  }
  auto device = parseInt(parts[1], 0, discovery::kMaxDevices - 1);
  if (!device) return badFault(text, "expected a device index in [0, 63]");
  fault.device = *device;
  if (kind == "device-node-missing" && parts.size() == 2) {
    fault.kind = FaultKind::kDeviceNodeMissing;
  } else if (kind == "garble" && parts.size() == 3 && !parts[2].empty() &&
             parts[2].find("..") == std::string_view::npos && parts[2].front() != '/') {
    fault.kind = FaultKind::kGarbledAttribute;
    fault.attribute = std::string(parts[2]);
  } else if (kind == "mem-corrupt" && parts.size() == 2) {
    fault.kind = FaultKind::kMemoryCorrupt;
  } else if (kind == "probe-fail" && parts.size() == 2) {
    fault.kind = FaultKind::kProbeFailed;
  } else if ((kind == "reset-slow" || kind == "reset-fail") &&
             (parts.size() == 2 || parts.size() == 3)) {
    fault.kind = kind == "reset-slow" ? FaultKind::kResetSlow : FaultKind::kResetFail;
    if (kind == "reset-slow") fault.resetMillis = kSlowResetMillis;
    if (parts.size() == 3) {
      auto millis = parseInt(parts[2], 0, 600'000);
      if (!millis) return badFault(text, "expected a reset time MS in [0, 600000]");
      fault.resetMillis = *millis;
    }
  } else if ((kind == "ecc" || kind == "ecc-repairable") &&
             (parts.size() == 2 || parts.size() == 3)) {
    fault.kind = kind == "ecc" ? FaultKind::kEccUncorrected : FaultKind::kEccRepairable;
    if (parts.size() == 3) {
      auto count = parseUint64(parts[2]);
      if (!count || *count == 0) return badFault(text, "expected a positive ECC count");
      fault.count = *count;
    }
  } else {
    return badFault(text, "unknown kind or wrong number of arguments");
  }
  return fault;
}

std::string describeFault(const Fault& fault) {
  const std::string device = "neuron" + std::to_string(fault.device);
  switch (fault.kind) {
    case FaultKind::kDeviceNodeMissing:
      return "device node of " + device + " removed";
    case FaultKind::kGarbledAttribute:
      return device + "/" + fault.attribute + " garbled";
    case FaultKind::kEccUncorrected:
      return device + " mem_ecc_uncorrected=" + std::to_string(fault.count);
    case FaultKind::kEccRepairable:
      return device + " mem_ecc_repairable_uncorrected=" + std::to_string(fault.count);
    case FaultKind::kProbeFailed:
      return device + " failed to probe";
    case FaultKind::kLinkCut:
      return "NeuronLink " + std::to_string(fault.device) + "-" +
             std::to_string(fault.otherDevice) + " cut";
    case FaultKind::kSlowLink:
      return "NeuronLink " + std::to_string(fault.device) + "-" +
             std::to_string(fault.otherDevice) + " trained at 1/" + std::to_string(fault.slowdown) +
             " speed";
    case FaultKind::kMemoryCorrupt:
      return device + " memory corrupt";
    case FaultKind::kResetSlow:
      return device + " resets take " + std::to_string(fault.resetMillis) + " ms";
    case FaultKind::kResetFail:
      return device + " resets end INVALID";
  }
  return "unknown fault";
}

Result<void> applyFault(const fs::path& root, const Fault& fault) {
  const fs::path device = deviceDir(root, fault.device);
  std::error_code ec;
  if (!fs::exists(device, ec)) {
    return makeError(
        ErrorCode::kNotFound,
        describeFault(fault) + ": the simulated node has no neuron" + std::to_string(fault.device));
  }
  switch (fault.kind) {
    case FaultKind::kDeviceNodeMissing: {
      const fs::path node = discovery::DiscoveryRoots::under(root).deviceNode(fault.device);
      fs::remove(node, ec);
      if (ec) return makeError(ErrorCode::kInternal, node.string() + ": " + ec.message());
      return okResult();
    }
    case FaultKind::kGarbledAttribute: {
      const fs::path path = device / fault.attribute;
      if (!fs::is_regular_file(path, ec)) {
        return makeError(ErrorCode::kNotFound,
                         describeFault(fault) + ": no attribute " + path.string());
      }
      // Bytes a flaky read could return: NUL, high bytes, a sign, no digits.
      return writeFile(path, std::string_view("\xff\xfe-x\0garbage", 12));
    }
    case FaultKind::kEccUncorrected:
      return writeFile(device / "stats" / "hardware" / "mem_ecc_uncorrected",
                       std::to_string(fault.count) + "\n");
    case FaultKind::kEccRepairable:
      // Only v3 counts HBM errors awaiting repair; v2 prints 0 whatever happens
      // (v2/neuron_dhal_v2.c:867-876) and v1 has no such file.
      if (const auto generation = simulatedGeneration(root);
          !generation || *generation != topology::Generation::kTrn2) {
        return makeError(
            ErrorCode::kInvalidArgument,
            describeFault(fault) + ": only trn2's driver counts HBM errors awaiting repair");
      }
      return writeFile(device / "stats" / "hardware" / "mem_ecc_repairable_uncorrected",
                       std::to_string(fault.count) + "\n");
    case FaultKind::kProbeFailed:
      TORUS_RETURN_IF_ERROR(failProbe(root, fault.device), describeFault(fault));
      return okResult();
    case FaultKind::kMemoryCorrupt:
      TORUS_RETURN_IF_ERROR(corruptMemory(root, fault.device), describeFault(fault));
      return okResult();
    case FaultKind::kResetSlow:
    case FaultKind::kResetFail: {
      std::string behaviour = fault.kind == FaultKind::kResetFail ? "fail" : "slow";
      if (fault.resetMillis >= 0) behaviour += " " + std::to_string(fault.resetMillis);
      return writeFile(resetBehaviourFile(root, fault.device), behaviour + "\n");
    }
    case FaultKind::kSlowLink:
    case FaultKind::kLinkCut: {
      const fs::path other = deviceDir(root, fault.otherDevice);
      if (!fs::exists(other, ec)) {
        return makeError(ErrorCode::kNotFound, describeFault(fault) +
                                                   ": the simulated node has no neuron" +
                                                   std::to_string(fault.otherDevice));
      }
      if (fault.kind == FaultKind::kSlowLink) {
        TORUS_RETURN_IF_ERROR(slowLink(root, fault.device, fault.otherDevice, fault.slowdown),
                              describeFault(fault));
        TORUS_RETURN_IF_ERROR(slowLink(root, fault.otherDevice, fault.device, fault.slowdown),
                              describeFault(fault));
        return okResult();
      }
      TORUS_RETURN_IF_ERROR(removeLink(root, fault.device, fault.otherDevice),
                            describeFault(fault));
      TORUS_RETURN_IF_ERROR(removeLink(root, fault.otherDevice, fault.device),
                            describeFault(fault));
      return okResult();
    }
  }
  return okResult();
}

}  // namespace torus::simulator
