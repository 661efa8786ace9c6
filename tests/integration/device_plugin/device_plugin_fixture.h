// The device plugin's test fixture: the agent's pieces (NodeMonitor over a simulated tree, the
// plugin manager) against the kubelet stand-in, over real unix sockets; shared by the test files
// of tests/integration/device_plugin.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/base/temp_dir.h"
#include "device-plugin/plugin_manager.h"
#include "node-runtime/agent/kube/pod_handoff.h"
#include "node-runtime/agent/plugin_node_view.h"
#include "node-runtime/discovery/discover_node.h"
#include "node-runtime/health/node_monitor.h"
#include "node-runtime/simulator/sim_tree.h"
#include "tests/integration/device_plugin/fake_kubelet.h"
#include "tests/integration/device_plugin/followed_handoff.h"
#include "tests/integration/kube/fake_api_server.h"
#include "tests/integration/node_runtime/driver_served_tree.h"

namespace torus::testing {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kCores = "aws.amazon.com/neuroncore";
constexpr const char* kDevices = "aws.amazon.com/neuron";

class DevicePluginTest : public ::testing::Test {
 protected:
  void start(const std::string& type, std::optional<int> lnc = std::nullopt,
             std::vector<plugin::ResourceKind> resources = {plugin::ResourceKind::kNeuronCore,
                                                            plugin::ResourceKind::kNeuron}) {
    auto dir = TempDir::create("dp");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
    pluginDir_ = (dir_->path() / "plugins").string();
    fs::create_directories(pluginDir_);
    simulator::SimulationSpec spec;
    spec.instanceType = type;
    spec.lnc = lnc;
    for (const std::string& text : faults_) {
      auto fault = simulator::parseFault(text);
      ASSERT_TRUE(fault.ok()) << text;
      spec.faults.push_back(*fault);
    }
    // Where it can, the simulated driver serves the resets, so a reset the agent writes is one a
    // driver takes; without it (not root, no FUSE) resets cannot complete and the tests that
    // need one skip (requireDriver).
    if (!DriverServedTree::unusableBecause()) {
      auto served = DriverServedTree::start(spec, dir_->path() / "node");
      ASSERT_TRUE(served.ok()) << served.error().message;
      served_ = std::move(*served);
      roots_ = served_->roots();
    } else {
      auto tree = simulator::writeSimulatedTree(spec, dir_->path() / "node");
      ASSERT_TRUE(tree.ok()) << tree.error().message;
      roots_ = tree->roots();
    }
    auto found = discovery::discoverNode(roots_, {});
    ASSERT_TRUE(found.ok());
    kubelet_ =
        std::make_unique<FakeKubelet>(pluginDir_, (dir_->path() / "pod-resources.sock").string());
    kubelet_->start();
    monitor_ =
        std::make_unique<health::NodeMonitor>(roots_, discovery::DiscoveryOptions{}, *found, 100ms);
    reset::ResetPolicy policy;
    policy.attempts = 3;
    policy.retryDelay = 50ms;
    view_ = std::make_unique<agent::PluginNodeView>(*monitor_, policy);
    plugin::DevicePluginOptions options;
    options.pluginDir = pluginDir_;
    options.resources = std::move(resources);
    options.podResourcesSocket = (dir_->path() / "pod-resources.sock").string();
    options.podResourcesInterval = 100ms;
    options.allocateGrace = 500ms;
    options.podUid = podUid_;
    options.podStillRuns = podStillRuns_;
    manager_ = std::make_unique<plugin::DevicePluginManager>(options, *view_, handoff_.get());
    ASSERT_TRUE(manager_->start().ok());
    for (const plugin::ResourceKind kind : options.resources) {
      ASSERT_TRUE(kubelet_->waitForRegistration(std::string(plugin::resourceName(kind)), 1, 5s));
    }
  }

  // A new agent in place of the old one (kubelet and its pods stay): the same plugin directory,
  // pod-resources socket and poll interval as start(), default options otherwise, no hand-off.
  void restartAgent() {
    manager_.reset();
    plugin::DevicePluginOptions options;
    options.pluginDir = pluginDir_;
    options.podResourcesSocket = (dir_->path() / "pod-resources.sock").string();
    options.podResourcesInterval = 100ms;
    manager_ = std::make_unique<plugin::DevicePluginManager>(options, *view_);
    ASSERT_TRUE(manager_->start().ok());
  }

  void TearDown() override {
    manager_.reset();
    handoff_.reset();
    view_.reset();
    monitor_.reset();
    kubelet_.reset();
    served_.reset();
  }

  // What start() gives the agent to tell a departed pod's processes by (departed_pods.h).
  plugin::DepartedPods::UidOf podUid_;
  plugin::DepartedPods::StillRuns podStillRuns_;

  // For a test that needs resets to complete: skips it where no simulated driver serves them.
  bool driverServesResets() const { return served_ != nullptr; }
  // The resets the driver has taken for `device`.
  std::uint64_t resetsOf(int device) const { return served_ ? served_->resetsOf(device) : 0; }

  fs::path deviceDir(int device) const {
    return roots_.sys / "devices" / "virtual" / "neuron_device" /
           ("neuron" + std::to_string(device));
  }

  grpc::Status allocate(const std::string& resource,
                        std::vector<std::vector<std::string>> containers,
                        v1beta1::AllocateResponse* response) {
    v1beta1::AllocateRequest request;
    for (const auto& ids : containers) {
      auto* container = request.add_container_requests();
      for (const auto& id : ids)
        container->add_devices_ids(id);
    }
    return send(resource, request, response);
  }
  // kubelet's two calls with a request as given, within 5 s.
  grpc::Status send(const std::string& resource, const v1beta1::AllocateRequest& request,
                    v1beta1::AllocateResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    return kubelet_->pluginClient(resource)->Allocate(&context, request, response);
  }
  grpc::Status send(const std::string& resource, const v1beta1::PreferredAllocationRequest& request,
                    v1beta1::PreferredAllocationResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 5s);
    return kubelet_->pluginClient(resource)->GetPreferredAllocation(&context, request, response);
  }

  std::string preferred(const std::string& resource, int size, std::vector<std::string> available,
                        std::vector<std::string> mustInclude = {}) {
    v1beta1::PreferredAllocationRequest request;
    auto* container = request.add_container_requests();
    for (const auto& id : available)
      container->add_available_deviceids(id);
    for (const auto& id : mustInclude)
      container->add_must_include_deviceids(id);
    container->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse response;
    const grpc::Status status = send(resource, request, &response);
    if (!status.ok()) return "error: " + status.error_message();
    std::string ids;
    for (const auto& id : response.container_responses(0).deviceids()) {
      ids += (ids.empty() ? "" : ",") + id;
    }
    return ids;
  }

  // The agent's view of the extender's hand-off, for pods bound to `node` in `api`; before
  // start().
  void followHandoff(const FakeApiServer& api, const std::string& node) {
    testing::followHandoff(api, node, handoff_);
  }

  static std::vector<std::string> range(int first, int count) {
    std::vector<std::string> ids;
    for (int id = first; id < first + count; ++id)
      ids.push_back(std::to_string(id));
    return ids;
  }

  std::optional<TempDir> dir_;
  std::string pluginDir_;
  std::unique_ptr<DriverServedTree> served_;  // declared first: it goes last
  discovery::DiscoveryRoots roots_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<health::NodeMonitor> monitor_;
  std::unique_ptr<agent::PluginNodeView> view_;
  std::unique_ptr<agent::PodAnnotationHandoff> handoff_;  // set before start() to use it
  std::vector<std::string> faults_;                       // set before start(): --simulate-fault
  std::unique_ptr<plugin::DevicePluginManager> manager_;
};

}  // namespace torus::testing
