// DiscoveryRoots: every filesystem root discovery reads, so the same code reads a real node
// (/sys, /dev, /opt/aws) or a tree the simulator wrote into a directory.
#pragma once

#include <filesystem>
#include <utility>

namespace torus::discovery {

struct DiscoveryRoots {
  std::filesystem::path sys = "/sys";
  std::filesystem::path dev = "/dev";
  std::filesystem::path optAws = "/opt/aws";
  // Where what Torus learned of this node is kept across its restarts (the agent's --state-dir);
  // empty: nothing is kept.
  std::filesystem::path stateDir;

  static DiscoveryRoots at(std::filesystem::path sysRoot, std::filesystem::path devRoot,
                           std::filesystem::path optAwsRoot) {
    DiscoveryRoots roots;
    roots.sys = std::move(sysRoot);
    roots.dev = std::move(devRoot);
    roots.optAws = std::move(optAwsRoot);
    return roots;
  }
  // The roots of a tree laid out under one directory: DIR/sys, DIR/dev, DIR/opt/aws.
  static DiscoveryRoots under(const std::filesystem::path& directory) {
    return at(directory / "sys", directory / "dev", directory / "opt" / "aws");
  }

  std::filesystem::path neuronClass() const { return sys / "class" / "neuron_device"; }
  std::filesystem::path deviceDir(int index) const {
    return neuronClass() / ("neuron" + std::to_string(index));
  }
  // Writing 1 resets every core of the device (the driver ignores it while the device is open).
  std::filesystem::path resetFile(int index) const { return deviceDir(index) / "reset"; }
  std::filesystem::path lncConfigFile() const { return optAws / "neuron" / "logical_nc_config"; }
  std::filesystem::path dmiProductName() const {
    return sys / "devices" / "virtual" / "dmi" / "id" / "product_name";
  }
  std::filesystem::path kernelLog() const { return dev / "kmsg"; }
  // The PCI functions bound to the Neuron driver, one entry each (pci_functions.h). The PCI
  // driver is named "neuron-driver" (aws-neuron-driver neuron_pci.c:369-374); only the module is
  // "neuron".
  std::filesystem::path neuronPciDriver() const {
    return sys / "bus" / "pci" / "drivers" / "neuron-driver";
  }
  // The Neuron kernel module's version (MODULE_VERSION), e.g. "2.24.7.0".
  std::filesystem::path driverVersionFile() const { return sys / "module" / "neuron" / "version"; }
  // Which PCI function each device is, as the driver said in this boot (pci_map_record.h).
  std::filesystem::path pciMapRecord() const { return stateDir / "pci-map"; }
  std::filesystem::path deviceNode(int index) const {
    return dev / ("neuron" + std::to_string(index));
  }
};

}  // namespace torus::discovery
