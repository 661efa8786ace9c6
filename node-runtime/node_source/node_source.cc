#include "node-runtime/node_source/node_source.h"

#include <charconv>
#include <cstdlib>
#include <system_error>

#include <sys/statvfs.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::node_source {

namespace {

Result<void> parseUltraServerPlace(std::string_view value, NodeSourceOptions* options) {
  const auto invalid = [&](std::string why) {
    return makeError(ErrorCode::kInvalidArgument,
                     "--simulate-ultraserver=" + std::string(value) + ": " + why +
                         " (expected SERIAL:POSITION, e.g. 0a11ce0000000100:2)");
  };
  const std::size_t colon = value.rfind(':');
  if (colon == std::string_view::npos) return invalid("no ':'");
  const std::string_view serialText = value.substr(0, colon);
  if (serialText.empty() || serialText.size() > 16)
    return invalid("the serial must be 1-16 hex digits");
  std::uint64_t serial = 0;
  const auto [end, error] =
      std::from_chars(serialText.data(), serialText.data() + serialText.size(), serial, 16);
  if (error != std::errc{} || end != serialText.data() + serialText.size()) {
    return invalid("the serial must be 1-16 hex digits");
  }
  if (serial == 0) return invalid("serial 0 is what the driver reports outside an UltraServer");
  auto position = parseInt(value.substr(colon + 1), 0, 3);
  if (!position) return invalid("the position must be 0, 1, 2 or 3");
  options->ultraServerSerial = serial;
  options->ultraServerPosition = *position;
  return okResult();
}

}  // namespace

void addNodeSourceSettings(config::SettingTable& table, NodeSourceOptions* options) {
  table.addString("simulate", "TORUS_SIMULATE", "simulate", "TYPE",
                  "write a simulated driver tree for this instance type (e.g. trn2.48xlarge, "
                  "or trn2.3xlarge, a type Torus's catalog lacks) and discover it",
                  &options->simulate);
  table.addString("simulate-dir", "TORUS_SIMULATE_DIR", "simulateDir", "DIR",
                  "directory for the simulated tree (kept; a restart reuses it as it is, "
                  "faults included); default: a temporary directory removed at exit",
                  &options->simulateDir);
  table.add({"simulate-fault", "TORUS_SIMULATE_FAULTS", "simulateFaults", "FAULT", "",
             "inject a fault into the simulated tree: device-node-missing:N, garble:N:ATTR, "
             "ecc:N[:COUNT], ecc-repairable:N[:COUNT] (trn2), probe-fail:N, mem-corrupt:N, "
             "reset-slow:N[:MS], reset-fail:N[:MS] (these two where neuron-sim-driver serves "
             "the tree), and states the driver cannot show: link-cut:A-B, "
             "slow-link:A-B[:FACTOR] (repeatable; comma list in env/config)",
             [options](std::string_view value) -> Result<void> {
               for (std::string_view item : splitAndTrim(value, ',')) {
                 if (item.empty()) continue;
                 auto fault = simulator::parseFault(item);
                 if (!fault) return std::move(fault).error();
                 options->faults.push_back(*fault);
               }
               return okResult();
             },
             true});
  table.add({"simulate-ultraserver", "TORUS_SIMULATE_ULTRASERVER", "simulateUltraServer",
             "SERIAL:POSITION", "",
             "trn2u: the simulated node is POSITION (0-3) of the UltraServer whose serial number "
             "is SERIAL (hex, up to 16 digits); the nodes of one simulated UltraServer share the "
             "serial (default: the simulator's one UltraServer, position 0)",
             [options](std::string_view value) -> Result<void> {
               return parseUltraServerPlace(value, options);
             }});
  table.addOptionalInt("simulate-pci-domain", "TORUS_SIMULATE_PCI_DOMAIN", "simulatePciDomain",
                       "DOMAIN",
                       "the PCI domain of the simulated node's functions (default 0, as on every "
                       "real instance); simulated nodes that share one kernel log (a test bed) "
                       "need domains of their own, as real nodes have kernels of their own",
                       0, 0xffff, &options->pciDomain);
  table.addString("sysfs-root", "TORUS_SYSFS_ROOT", "sysfsRoot", "DIR",
                  "root of the sysfs tree to read", &options->sysfsRoot);
  table.addString("dev-root", "TORUS_DEV_ROOT", "devRoot", "DIR",
                  "directory holding the neuronN device nodes", &options->devRoot);
  table.addString("aws-root", "TORUS_AWS_ROOT", "awsRoot", "DIR",
                  "the /opt/aws directory (holds neuron/logical_nc_config)", &options->awsRoot);
  table.addString("state-dir", "TORUS_STATE_DIR", "stateDir", "DIR",
                  "where to keep which PCI function each device is, as the driver said in this "
                  "boot, for a restart after the kernel log dropped its load lines (the chart: "
                  "/var/lib/torus); default: nothing kept",
                  &options->stateDir);
  table.addString("instance-type", "TORUS_INSTANCE_TYPE", "instanceType", "TYPE",
                  "instance type; default: read from the DMI product name", &options->instanceType);
  table.addOptionalInt("lnc", "TORUS_LNC", "lnc", "1|2",
                       "logical NeuronCore config; default: /opt/aws/neuron/logical_nc_config, "
                       "else 2 on trn2 and 1 elsewhere",
                       1, 2, &options->lnc);
}

namespace {

// A simulated tree is ~13,000 tiny files for a trn2.48xlarge. Real sysfs lives in memory, and so
// should its stand-in: on a disk-backed /tmp creating them takes seconds instead of ~0.1 s. An
// explicit TMPDIR still wins.
std::filesystem::path simulationBaseDirectory() {
  const char* tmpdir = std::getenv("TMPDIR");
  if (tmpdir != nullptr && *tmpdir != '\0') return tmpdir;
  struct statvfs stats {};
  constexpr unsigned long long kNeeded = 512ULL * 1024 * 1024;
  if (::statvfs("/dev/shm", &stats) == 0 &&
      static_cast<unsigned long long>(stats.f_bavail) * stats.f_frsize > kNeeded &&
      ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  return "/tmp";
}

}  // namespace

Result<PreparedNode> prepareNode(const NodeSourceOptions& options) {
  PreparedNode prepared;
  if (options.simulate.empty()) {
    if (!options.faults.empty()) {
      return makeError(ErrorCode::kInvalidArgument,
                       "--simulate-fault needs --simulate: faults go into a simulated tree only");
    }
    if (options.ultraServerSerial) {
      return makeError(ErrorCode::kInvalidArgument,
                       "--simulate-ultraserver needs --simulate: a real node's driver says where "
                       "it is");
    }
    if (options.pciDomain) {
      return makeError(ErrorCode::kInvalidArgument,
                       "--simulate-pci-domain needs --simulate: a real node's devices are where "
                       "its PCI bus put them");
    }
    prepared.roots =
        discovery::DiscoveryRoots::at(options.sysfsRoot, options.devRoot, options.awsRoot);
    prepared.roots.stateDir = options.stateDir;
    return prepared;
  }
  std::filesystem::path root;
  if (options.simulateDir.empty()) {
    auto temp = TempDir::create("torus-sim", simulationBaseDirectory());
    if (!temp) return std::move(temp).error();
    root = temp->path();
    prepared.tempDir_.emplace(std::move(*temp));
  } else {
    root = options.simulateDir;
  }
  simulator::SimulationSpec spec;
  spec.instanceType = options.simulate;
  spec.pciDomain = options.pciDomain.value_or(0);
  spec.lnc = options.lnc;
  spec.faults = options.faults;
  if (options.ultraServerSerial) {
    spec.ultraServerSerial = *options.ultraServerSerial;
    spec.ultraServerNodeId = options.ultraServerPosition;
  }
  for (const simulator::Fault& fault : spec.faults) {
    if (simulator::inventedByTheSimulator(fault)) {
      TORUS_LOG(Warn, Simulator, "this fault is not a state the Neuron driver can show",
                {"fault", simulator::describeFault(fault)});
    }
  }
  auto tree = simulator::writeSimulatedTree(spec, root);
  if (!tree) return std::move(tree).error();
  TORUS_LOG(Info, Simulator,
            tree->reused ? "reusing the simulated driver tree" : "wrote simulated driver tree",
            {"instance_type", options.simulate}, {"root", root.string()}, {"files", tree->files},
            {"character_devices", tree->characterDevices},
            {"faults", static_cast<int>(options.faults.size())});
  prepared.roots = tree->roots();
  prepared.roots.stateDir = options.stateDir;
  return prepared;
}

discovery::DiscoveryOptions discoveryOptionsOf(const NodeSourceOptions& options) {
  discovery::DiscoveryOptions result;
  if (!options.instanceType.empty()) result.instanceType = options.instanceType;
  result.lnc = options.lnc;
  return result;
}

}  // namespace torus::node_source
