#include "node-runtime/simulator/sim_pci_tree.h"

#include <cstdio>
#include <string>
#include <system_error>

#include "common/base/file_io.h"

namespace torus::simulator {
namespace {

namespace fs = std::filesystem;

// The PCI id of Amazon's Elastic Fabric Adapter as the simulator writes it (vendor 0x1d0f).
constexpr const char* kEfaDeviceId = "0xefa1";

// The device memory BAR as the kernel offers it: resource4, sized as the device's memory, and
// resource4_wc, a second (write-combining) view of the same memory, hence a hard link. Sparse, so
// only the pages the deep check touches take space.
Result<void> writeMemoryBar(const fs::path& function, std::uint64_t bytes) {
  const fs::path bar = function / "resource4";
  TORUS_RETURN_IF_ERROR(writeFile(bar, "", CreateParents::kNo), "memory BAR");
  std::error_code ec;
  fs::resize_file(bar, bytes, ec);
  if (!ec) fs::create_hard_link(bar, function / "resource4_wc", ec);
  if (ec) return makeError(ErrorCode::kInternal, bar.string() + ": " + ec.message());
  return okResult();
}

// A function's directory under its root complex, with the links the kernel makes to it: one in
// /sys/bus/pci/devices and one in its driver's directory.
Result<fs::path> writeFunction(const fs::path& sys, const std::string& root, const std::string& bdf,
                               const std::string& driverName) {
  const fs::path function = sys / "devices" / root / bdf;
  const fs::path target = fs::path("devices") / root / bdf;
  std::error_code ec;
  fs::create_directories(function, ec);
  const fs::path devices = sys / "bus" / "pci" / "devices";
  const fs::path driver = sys / "bus" / "pci" / "drivers" / driverName;
  if (!ec) fs::create_directories(devices, ec);
  if (!ec) fs::create_directories(driver, ec);
  if (!ec) fs::create_directory_symlink(fs::path("../../..") / target, devices / bdf, ec);
  if (!ec) fs::create_directory_symlink(fs::path("../../../..") / target, driver / bdf, ec);
  if (ec) return makeError(ErrorCode::kInternal, function.string() + ": " + ec.message());
  return function;
}

}  // namespace

Result<void> writePciFunctions(TreeWriter& out, const fs::path& sys,
                               const topology::InstanceType& type,
                               const SimulatedPciLayout& layout) {
  const auto& names = topology::architectureOf(type.generation);
  char deviceId[8];
  std::snprintf(deviceId, sizeof(deviceId), "0x%04x", names.pciDeviceId);
  for (const SimulatedNeuronFunction& neuron : layout.neuron) {
    auto function = writeFunction(sys, neuron.root, neuron.bdf, kNeuronPciDriver);
    if (!function) return std::move(function).error();
    TORUS_RETURN_IF_ERROR(out.file(*function / "vendor", "0x1d0f\n"), neuron.bdf);
    TORUS_RETURN_IF_ERROR(out.file(*function / "device", std::string(deviceId) + "\n"), neuron.bdf);
    TORUS_RETURN_IF_ERROR(out.file(*function / "numa_node", std::to_string(neuron.numaNode) + "\n"),
                          neuron.bdf);
    TORUS_RETURN_IF_ERROR(out.file(*function / "local_cpulist", neuron.cpuList + "\n"), neuron.bdf);
    TORUS_RETURN_IF_ERROR(writeMemoryBar(*function, type.memoryBytesPerDevice), neuron.bdf);
  }
  for (const SimulatedEfaFunction& efa : layout.efa) {
    auto nic = writeFunction(sys, efa.root, efa.bdf, "efa");
    if (!nic) return std::move(nic).error();
    TORUS_RETURN_IF_ERROR(out.file(*nic / "vendor", "0x1d0f\n"), efa.bdf);
    TORUS_RETURN_IF_ERROR(out.file(*nic / "device", std::string(kEfaDeviceId) + "\n"), efa.bdf);
    TORUS_RETURN_IF_ERROR(out.file(*nic / "numa_node", std::to_string(efa.numaNode) + "\n"),
                          efa.bdf);
  }
  return okResult();
}

}  // namespace torus::simulator
