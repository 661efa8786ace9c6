#include "node-runtime/simulator/sim_tree.h"

#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>

#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/topology/instance_catalog.h"
#include "common/topology/neuronlink_graph.h"
#include "node-runtime/discovery/driver_counters.h"
#include "node-runtime/discovery/neuronlink_attributes.h"
#include "node-runtime/simulator/sim_device_node.h"
#include "node-runtime/simulator/sim_instance.h"
#include "node-runtime/simulator/sim_pci_layout.h"
#include "node-runtime/simulator/sim_pci_tree.h"
#include "node-runtime/simulator/sim_tree_writer.h"

namespace torus::simulator {
namespace {

// A Neuron driver release of late 2025, as its module reports it.
constexpr std::string_view kSimulatedDriverVersion = "2.24.7.0";

namespace fs = std::filesystem;
using topology::InstanceType;

using discovery::kCoreOtherInfo;
using discovery::kCoreStatusCounters;
using discovery::kDeviceMemCategories;
using discovery::kHostMemCategories;

constexpr const char* kNeuronLinkSpeed = "32.0 GT/s\n";
// Names the instance type of a finished tree, so a restart can reuse it.
constexpr const char* kStampFile = ".torus-simulated-instance-type";

std::string hex16(std::uint64_t value) {
  char buffer[20];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string joinInts(const std::vector<int>& values, std::string_view separator) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) text += separator;
    text += std::to_string(values[i]);
  }
  return text;
}

Result<void> writeCore(TreeWriter& out, const fs::path& core, const InstanceType& type) {
  const auto& names = topology::architectureOf(type.generation);
  TORUS_RETURN_IF_ERROR(out.file(core / "info" / "architecture" / "arch_type",
                                 std::string(names.coreArchType) + "\n"),
                        "core");
  for (const char* counter : kCoreStatusCounters) {
    TORUS_RETURN_IF_ERROR(out.counters(core / "stats" / "status" / counter, {"total", "present"}),
                          "core");
  }
  for (const char* counter : kCoreOtherInfo) {
    TORUS_RETURN_IF_ERROR(
        out.counters(core / "stats" / "other_info" / counter, {"total", "present"}), "core");
  }
  const fs::path memory = core / "stats" / "memory_usage";
  TORUS_RETURN_IF_ERROR(out.counters(memory / "host_mem", {"total", "present", "peak"}), "core");
  TORUS_RETURN_IF_ERROR(out.counters(memory / "device_mem", {"total", "present", "peak"}), "core");
  for (const char* category : kDeviceMemCategories) {
    TORUS_RETURN_IF_ERROR(
        out.counters(memory / "device_mem" / category, {"total", "present", "peak"}), "core");
  }
  return okResult();
}

Result<void> writeStandInCheckCommand(const SimulatedTree& tree) {
  const fs::path script = standInCheckCommand(tree);
  const std::string classDir = (tree.roots().neuronClass()).string();
  const std::string text =
      "#!/bin/sh\n"
      "# Stand-in for nccom-test on a Torus simulated node (node-runtime/simulator/sim_tree.h).\n"
      "set -- $TORUS_DEEP_CHECK_RING\n"
      "[ $# -ge 2 ] || { echo \"nccom-test (simulated): fewer than two devices\"; exit 0; }\n"
      "previous=$1\n"
      "shift\n"
      "for device in \"$@\"; do\n"
      "  tr -d ' ' < \"" +
      classDir +
      "/neuron$previous/connected_devices\" | tr ',' '\\n' |\n"
      "    grep -qx \"$device\" || {\n"
      "    echo \"nccom-test (simulated): allreduce failed: neuron$previous cannot reach "
      "neuron$device\"\n"
      "    exit 1\n"
      "  }\n"
      "  previous=$device\n"
      "done\n"
      "echo \"nccom-test (simulated): allreduce over $TORUS_DEEP_CHECK_RING passed\"\n";
  TORUS_RETURN_IF_ERROR(writeFile(script, text), script.string());
  std::error_code ec;
  fs::permissions(script,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  if (ec) return makeError(ErrorCode::kPermissionDenied, script.string() + ": " + ec.message());
  return okResult();
}

Result<void> writeDevice(TreeWriter& out, const fs::path& sys, const InstanceType& type, int index,
                         const SimulationSpec& spec) {
  const int nodeId = spec.ultraServerNodeId;
  const auto& names = topology::architectureOf(type.generation);
  const std::string name = "neuron" + std::to_string(index);
  const fs::path dir = sys / "devices" / "virtual" / "neuron_device" / name;
  // The driver prints core_count without a newline and connected_devices as "a, b\n", or "\n"
  // on an instance whose chip count it has no table for.
  TORUS_RETURN_IF_ERROR(out.file(dir / "core_count", std::to_string(type.physicalCoresPerDevice)),
                        name);
  const std::vector<int> neighbours = driverListsNeighbours(type.generation, type.deviceCount)
                                          ? topology::driverNeighbours(type, index)
                                          : std::vector<int>{};
  TORUS_RETURN_IF_ERROR(out.file(dir / "connected_devices", joinInts(neighbours, ", ") + "\n"),
                        name);
  // Every link trains at full speed; the slow-link fault lowers one.
  for (const int peer : neighbours) {
    if (!spec.linkSpeedFiles) break;
    const fs::path link = discovery::neuronLinkDir(dir, peer);
    TORUS_RETURN_IF_ERROR(out.file(link / discovery::kMaxLinkSpeed, kNeuronLinkSpeed), name);
    TORUS_RETURN_IF_ERROR(out.file(link / discovery::kCurrentLinkSpeed, kNeuronLinkSpeed), name);
  }
  TORUS_RETURN_IF_ERROR(out.file(dir / "reset", "1\n"), name);
  TORUS_RETURN_IF_ERROR(out.file(dir / "dev", "240:" + std::to_string(index) + "\n"), name);
  TORUS_RETURN_IF_ERROR(out.file(dir / "uevent", "MAJOR=240\nMINOR=" + std::to_string(index) +
                                                     "\nDEVNAME=" + name + "\n"),
                        name);
  const fs::path arch = dir / "info" / "architecture";
  TORUS_RETURN_IF_ERROR(out.file(arch / "arch_type", std::string(names.archType) + "\n"), name);
  TORUS_RETURN_IF_ERROR(out.file(arch / "instance_type", std::string(names.instanceType) + "\n"),
                        name);
  TORUS_RETURN_IF_ERROR(out.file(arch / "device_name", std::string(names.deviceName) + "\n"), name);
  TORUS_RETURN_IF_ERROR(out.file(dir / "info" / "notify_delay", "-1\n"), name);
  if (type.generation != topology::Generation::kInf1) {
    // v2/v3 drivers only: serial numbers and hardware ECC counters.
    // Unique per UltraServer (the default one keeps the historical numbers), node and chip,
    const std::uint64_t ultraServer =
        (spec.ultraServerSerial ^ kDefaultUltraServerSerial) & 0xffffffffULL;
    // and PCI domain (the nodes of a test bed, which share one kernel log: a serial names one
    // chip).
    const std::uint64_t serial =
        (0x5e7a000000000000ULL + (ultraServer << 16) + static_cast<std::uint64_t>(nodeId) * 64 +
         static_cast<std::uint64_t>(index)) ^
        (static_cast<std::uint64_t>(spec.pciDomain) << 48);
    TORUS_RETURN_IF_ERROR(out.file(dir / "info" / "serial_number", hex16(serial) + "\n"), name);
    for (const char* counter : discovery::kEccCounters) {
      TORUS_RETURN_IF_ERROR(out.file(dir / "stats" / "hardware" / counter, "0\n"), name);
    }
    TORUS_RETURN_IF_ERROR(
        out.file(dir / "stats" / "power" / "utilization", "POWER_STATUS_NO_DATA,0,0,0,0\n"), name);
  }
  for (const char* category : kHostMemCategories) {
    TORUS_RETURN_IF_ERROR(out.counters(dir / "stats" / "memory_usage" / "host_mem" / category,
                                       {"total", "present", "peak"}),
                          name);
  }
  for (int core = 0; core < type.physicalCoresPerDevice; ++core) {
    TORUS_RETURN_IF_ERROR(writeCore(out, dir / ("neuron_core" + std::to_string(core)), type), name);
  }
  std::error_code ec;
  const fs::path classLink = sys / "class" / "neuron_device" / name;
  fs::create_directories(classLink.parent_path(), ec);
  fs::create_directory_symlink(fs::path("../../devices/virtual/neuron_device") / name, classLink,
                               ec);
  if (ec) return makeError(ErrorCode::kInternal, classLink.string() + ": " + ec.message());
  return okResult();
}

// Class-level UltraServer attributes; outside an UltraServer the driver prints -1 / zeros / "".
Result<void> writeUltraServer(TreeWriter& out, const fs::path& sys, const InstanceType& type,
                              int nodeId, std::uint64_t serial) {
  const fs::path dir = sys / "class" / "neuron_device";
  if (!type.ultraServerNode) {
    TORUS_RETURN_IF_ERROR(out.file(dir / "node_id_2", "-1\n"), "ultraserver");
    TORUS_RETURN_IF_ERROR(out.file(dir / "node_id_4", "-1\n"), "ultraserver");
    TORUS_RETURN_IF_ERROR(out.file(dir / "server_id_2", hex16(0) + "\n"), "ultraserver");
    TORUS_RETURN_IF_ERROR(out.file(dir / "server_id_4", hex16(0) + "\n"), "ultraserver");
    return out.file(dir / "ultraserver_mode", "\n");
  }
  // As the driver reports a 4-node election (neuron_pelect.c): its 2-node files describe the
  // pairs over the vertical links, {0,1} and {2,3}; node_id_2 is the position inside the pair and
  // server_id_2 is the UltraServer's serial number for the first pair and one less for the second.
  // The modes offered are X4, X2V and X1 (X2H only after a 2-node election).
  TORUS_RETURN_IF_ERROR(out.file(dir / "node_id_2", std::to_string(nodeId % 2) + "\n"),
                        "ultraserver");
  TORUS_RETURN_IF_ERROR(out.file(dir / "node_id_4", std::to_string(nodeId) + "\n"), "ultraserver");
  TORUS_RETURN_IF_ERROR(out.file(dir / "server_id_2", hex16(serial - (nodeId < 2 ? 0 : 1)) + "\n"),
                        "ultraserver");
  TORUS_RETURN_IF_ERROR(out.file(dir / "server_id_4", hex16(serial) + "\n"), "ultraserver");
  return out.file(dir / "ultraserver_mode", "1,3,4\n");
}

// An agent restarted over its tree (a DaemonSet pod restart, a crash) must find the node as it
// was, faults injected since included, exactly as a real node's sysfs survives an agent restart.
Result<SimulatedTree> reuseTree(const SimulationSpec& spec, const fs::path& root) {
  auto stamp = readSmallFile(root / kStampFile, 256);
  if (!stamp) {
    return makeError(ErrorCode::kAlreadyExists,
                     "simulate: " + (root / "sys").string() +
                         " exists but is not a complete simulated tree (no " + kStampFile +
                         "); use an empty directory");
  }
  const std::string written(trim(*stamp));
  if (written != spec.instanceType) {
    return makeError(ErrorCode::kAlreadyExists, "simulate: " + root.string() +
                                                    " holds a simulated " + written +
                                                    " tree, not " + spec.instanceType +
                                                    "; use another directory or remove this one");
  }
  SimulatedTree tree;
  tree.root = root;
  tree.reused = true;
  struct stat node {};
  tree.characterDevices =
      ::stat(tree.roots().deviceNode(0).c_str(), &node) == 0 && S_ISCHR(node.st_mode);
  for (const Fault& fault : spec.faults) {
    TORUS_RETURN_IF_ERROR(applyFault(root, fault), "simulate");
  }
  return tree;
}

}  // namespace

Result<SimulatedTree> writeSimulatedTree(const SimulationSpec& spec, const fs::path& root) {
  auto instance = simulatedInstance(spec.instanceType);
  if (!instance) return std::move(instance).error();
  const InstanceType* type = &instance->type;
  const int lnc = spec.lnc.value_or(type->defaultLnc);
  if (!topology::supportsLnc(*type, lnc)) {
    return makeError(
        ErrorCode::kInvalidArgument,
        "simulate: LNC " + std::to_string(lnc) + " is not supported on " + std::string(type->name));
  }
  if (spec.pciDomain < 0 || spec.pciDomain > 0xffff) {
    return makeError(ErrorCode::kInvalidArgument, "simulate: a PCI domain is 0-65535");
  }
  if (spec.ultraServerNodeId < 0 || spec.ultraServerNodeId >= topology::kUltraServerNodes) {
    return makeError(ErrorCode::kInvalidArgument, "simulate: UltraServer node id must be 0..3");
  }
  if (!type->ultraServerNode &&
      (spec.ultraServerNodeId != 0 || spec.ultraServerSerial != kDefaultUltraServerSerial)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "simulate: " + std::string(type->name) +
                         " is not an UltraServer node; only trn2u types take a place in one");
  }
  std::error_code ec;
  if (fs::exists(root / "sys", ec)) return reuseTree(spec, root);
  SimulatedTree tree;
  tree.root = root;
  tree.characterDevices = spec.characterDevices;
  TreeWriter out(tree.files);
  const discovery::DiscoveryRoots roots = tree.roots();
  for (int index = 0; index < type->deviceCount; ++index) {
    TORUS_RETURN_IF_ERROR(writeDevice(out, roots.sys, *type, index, spec), "simulate");
  }
  const SimulatedPciLayout layout = simulatedPciLayout(*type, spec.pciDomain);
  TORUS_RETURN_IF_ERROR(writePciFunctions(out, roots.sys, *type, layout), "simulate");
  TORUS_RETURN_IF_ERROR(
      writeUltraServer(out, roots.sys, *type, spec.ultraServerNodeId, spec.ultraServerSerial),
      "simulate");
  TORUS_RETURN_IF_ERROR(out.file(roots.dmiProductName(), std::string(type->name) + "\n"),
                        "simulate");
  TORUS_RETURN_IF_ERROR(
      out.file(roots.driverVersionFile(), std::string(kSimulatedDriverVersion) + "\n"), "simulate");
  if (type->maxLnc > 1 || spec.lnc) {
    TORUS_RETURN_IF_ERROR(
        out.file(roots.lncConfigFile(), "NEURON_LOGICAL_NC_CONFIG=" + std::to_string(lnc) + "\n"),
        "simulate");
  }
  fs::create_directories(roots.dev, ec);
  for (int index = 0; index < type->deviceCount; ++index) {
    const fs::path node = roots.deviceNode(index);
    if (!makeDeviceNode(node, index, spec.characterDevices)) {
      tree.characterDevices = false;
      TORUS_RETURN_IF_ERROR(writeFile(node, ""), "simulate");
    }
  }
  TORUS_RETURN_IF_ERROR(writeStandInCheckCommand(tree), "simulate");
  // The kernel log the agent reads (real nodes: /dev/kmsg), holding the driver's load-time lines;
  // tests append driver lines to it.
  TORUS_RETURN_IF_ERROR(writeFile(roots.kernelLog(), driverLoadLog(*type, layout)), "simulate");
  for (const Fault& fault : spec.faults) {
    TORUS_RETURN_IF_ERROR(applyFault(root, fault), "simulate");
  }
  // Written last: a tree whose writing was cut short has no stamp and is not reused.
  TORUS_RETURN_IF_ERROR(writeFile(root / kStampFile, std::string(type->name) + "\n"), "simulate");
  return tree;
}

}  // namespace torus::simulator

namespace torus::simulator {

std::filesystem::path standInCheckCommand(const SimulatedTree& tree) {
  return tree.roots().optAws / "neuron" / "bin" / "nccom-test";
}

}  // namespace torus::simulator
