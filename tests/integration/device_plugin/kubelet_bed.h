// For tests that run neuron-node-agent as a process: a temporary directory with kubelet's
// device-plugin directory and pod-resources socket, and the kubelet stand-in serving both.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/base/temp_dir.h"
#include "tests/integration/device_plugin/fake_kubelet.h"

namespace torus::testing {

struct KubeletBed {
  explicit KubeletBed(const std::string& prefix) {
    auto created = TempDir::create(prefix);
    // gtest reports the exception as the test's failure.
    if (!created.ok()) throw std::runtime_error("temporary directory: " + created.error().message);
    dir.emplace(std::move(*created));
    plugins = (dir->path() / "plugins").string();
    podResources = (dir->path() / "pod-resources.sock").string();
    std::filesystem::create_directories(plugins);
    kubelet = std::make_unique<FakeKubelet>(plugins, podResources);
    kubelet->start();
  }
  std::filesystem::path path() const { return dir->path(); }

  std::optional<TempDir> dir;
  std::string plugins;
  std::string podResources;
  std::unique_ptr<FakeKubelet> kubelet;
};

}  // namespace torus::testing
