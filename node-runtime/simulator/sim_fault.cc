#include "node-runtime/simulator/sim_fault.h"

#include <system_error>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/discovery_roots.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::simulator {
namespace {

namespace fs = std::filesystem;

Error badFault(std::string_view text, std::string_view why) {
  return makeError(ErrorCode::kInvalidArgument,
                   "fault " + quoteJsonString(text) + ": " + std::string(why) +
                       " (known: device-node-missing:N, garble:N:ATTR, ecc:N[:COUNT], "
                       "link-cut:A-B)");
}

fs::path deviceDir(const fs::path& root, int device) {
  return discovery::DiscoveryRoots::under(root).sys / "devices" / "virtual" / "neuron_device" /
         ("neuron" + std::to_string(device));
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
  return writeFile(path, rewritten + "\n");
}

}  // namespace

Result<Fault> parseFault(std::string_view text) {
  const std::vector<std::string_view> parts = splitAndTrim(text, ':');
  if (parts.size() < 2) return badFault(text, "expected KIND:ARGS");
  Fault fault;
  const std::string_view kind = parts[0];
  if (kind == "link-cut") {
    const std::vector<std::string_view> ends = splitAndTrim(parts[1], '-');
    if (parts.size() != 2 || ends.size() != 2) return badFault(text, "expected link-cut:A-B");
    auto a = parseInt(ends[0], 0, discovery::kMaxDevices - 1);
    auto b = parseInt(ends[1], 0, discovery::kMaxDevices - 1);
    if (!a || !b || *a == *b) return badFault(text, "expected two different device indices");
    fault.kind = FaultKind::kLinkCut;
    fault.device = *a;
    fault.otherDevice = *b;
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
  } else if (kind == "ecc" && (parts.size() == 2 || parts.size() == 3)) {
    fault.kind = FaultKind::kEccUncorrected;
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
    case FaultKind::kLinkCut:
      return "NeuronLink " + std::to_string(fault.device) + "-" +
             std::to_string(fault.otherDevice) + " cut";
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
    case FaultKind::kLinkCut: {
      const fs::path other = deviceDir(root, fault.otherDevice);
      if (!fs::exists(other, ec)) {
        return makeError(ErrorCode::kNotFound, describeFault(fault) +
                                                   ": the simulated node has no neuron" +
                                                   std::to_string(fault.otherDevice));
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
