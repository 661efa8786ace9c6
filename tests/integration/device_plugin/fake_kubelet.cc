#include "tests/integration/device_plugin/fake_kubelet.h"

#include <atomic>
#include <filesystem>
#include <thread>

namespace torus::testing {

class FakeKubelet::Registration final : public v1beta1::Registration::Service {
 public:
  explicit Registration(FakeKubelet& kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    if (request->version() != "v1beta1") {
      return {grpc::StatusCode::INVALID_ARGUMENT, "unsupported version " + request->version()};
    }
    {
      std::lock_guard lock(kubelet_.mutex_);
      kubelet_.lastRequest_[request->resource_name()] = *request;
      kubelet_.endpoints_[request->resource_name()] = request->endpoint();
    }
    // Like kubelet: dial the plugin back and keep a ListAndWatch stream open.
    kubelet_.watchPlugin(request->resource_name(), request->endpoint());
    std::lock_guard lock(kubelet_.mutex_);
    ++kubelet_.registrations_[request->resource_name()];
    kubelet_.changed_.notify_all();
    return grpc::Status::OK;
  }

 private:
  FakeKubelet& kubelet_;
};

class FakeKubelet::PodResources final : public v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    if (refused_) return {grpc::StatusCode::UNAVAILABLE, "pod-resources refused by the test"};
    std::unique_lock lock(mutex_);
    if (const auto delay = delay_.load(); delay.count() > 0) {
      lock.unlock();
      std::this_thread::sleep_for(delay);
      lock.lock();
    }
    const std::vector<PodHolding> held = source_ ? source_() : held_;
    for (const PodHolding& holding : held) {
      auto* pod = response->add_pod_resources();
      pod->set_name(holding.pod.empty() ? "pod-" + std::to_string(response->pod_resources_size())
                                        : holding.pod);
      pod->set_namespace_(holding.podNamespace);
      auto* container = pod->add_containers();
      container->set_name("main");
      auto* devices = container->add_devices();
      devices->set_resource_name(holding.resource);
      for (const std::string& id : holding.ids)
        devices->add_device_ids(id);
    }
    ++answered_;
    answeredChanged_.notify_all();
    return grpc::Status::OK;
  }
  void setSource(std::function<std::vector<PodHolding>()> source) {
    std::lock_guard lock(mutex_);
    source_ = std::move(source);
  }
  int answered() {
    std::lock_guard lock(mutex_);
    return answered_;
  }
  bool waitForAnswersAfter(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return answeredChanged_.wait_for(lock, timeout, [&] { return answered_ > count; });
  }
  void set(std::vector<PodHolding> held) {
    std::lock_guard lock(mutex_);
    held_ = std::move(held);
  }
  void setDelay(std::chrono::milliseconds delay) { delay_ = delay; }
  void setRefused(bool refused) { refused_ = refused; }

 private:
  std::atomic<bool> refused_{false};
  std::atomic<std::chrono::milliseconds> delay_{std::chrono::milliseconds(0)};
  std::mutex mutex_;
  std::condition_variable answeredChanged_;
  std::vector<PodHolding> held_;
  std::function<std::vector<PodHolding>()> source_;
  int answered_ = 0;
};

FakeKubelet::FakeKubelet(std::string pluginDir, std::string podResourcesSocket)
    : dir_(std::move(pluginDir)),
      podResourcesSocket_(std::move(podResourcesSocket)),
      podResources_(std::make_unique<PodResources>()) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + podResourcesSocket_, grpc::InsecureServerCredentials());
  builder.RegisterService(podResources_.get());
  podResourcesServer_ = builder.BuildAndStart();
}

FakeKubelet::~FakeKubelet() {
  stopAndWipe();
  podResourcesServer_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

void FakeKubelet::start() {
  registration_ = std::make_unique<Registration>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(registration_.get());
  server_ = builder.BuildAndStart();
}

void FakeKubelet::stopAndWipe() {
  std::vector<std::jthread> watchers;
  {
    std::lock_guard lock(mutex_);
    for (auto& stream : streams_)
      stream->TryCancel();
    watchers = std::move(watchers_);
    watchers_.clear();
  }
  watchers.clear();  // joins, without holding the lock the watchers take
  {
    std::lock_guard lock(mutex_);
    streams_.clear();
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::filesystem::remove(entry.path(), ec);
  }
}

void FakeKubelet::watchPlugin(std::string resource, std::string endpoint) {
  auto context = std::make_unique<grpc::ClientContext>();
  grpc::ClientContext* raw = context.get();
  {
    std::lock_guard lock(mutex_);
    streams_.push_back(std::move(context));
  }
  const std::string socket = dir_ + "/" + endpoint;
  std::lock_guard watchersLock(mutex_);
  watchers_.emplace_back([this, resource, socket, raw] {
    auto channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    {
      grpc::ClientContext optionsContext;
      optionsContext.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1beta1::DevicePluginOptions options;
      if (!stub->GetDevicePluginOptions(&optionsContext, v1beta1::Empty(), &options).ok()) return;
    }
    auto reader = stub->ListAndWatch(raw, v1beta1::Empty());
    v1beta1::ListAndWatchResponse response;
    bool first = true;
    while (reader->Read(&response)) {
      std::map<std::string, SeenDevice> seen;
      for (const auto& device : response.devices()) {
        SeenDevice entry{device.health(), -1};
        if (device.topology().nodes_size() > 0) {
          entry.numaNode = static_cast<int>(device.topology().nodes(0).id());
        }
        seen[device.id()] = entry;
      }
      std::lock_guard lock(mutex_);
      if (first) firstLists_[resource].push_back(seen);
      first = false;
      devices_[resource] = std::move(seen);
      changed_.notify_all();
    }
    reader->Finish();
  });
}

bool FakeKubelet::waitForRegistration(const std::string& resource, int count,
                                      std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return registrations_[resource] >= count; });
}

v1beta1::RegisterRequest FakeKubelet::lastRegistration(const std::string& resource) {
  std::lock_guard lock(mutex_);
  return lastRequest_[resource];
}

bool FakeKubelet::waitForDevices(
    const std::string& resource,
    const std::function<bool(const std::map<std::string, SeenDevice>&)>& check,
    std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] {
    const auto it = devices_.find(resource);
    return it != devices_.end() && check(it->second);
  });
}

std::map<std::string, SeenDevice> FakeKubelet::devices(const std::string& resource) {
  std::lock_guard lock(mutex_);
  return devices_[resource];
}

std::optional<std::map<std::string, SeenDevice>> FakeKubelet::firstListOfStream(
    const std::string& resource, int stream, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] {
        return static_cast<int>(firstLists_[resource].size()) >= stream;
      })) {
    return std::nullopt;
  }
  return firstLists_[resource][static_cast<std::size_t>(stream - 1)];
}

int FakeKubelet::healthyCount(const std::string& resource) {
  int count = 0;
  for (const auto& [id, device] : devices(resource))
    count += device.health == "Healthy";
  return count;
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> FakeKubelet::pluginClient(
    const std::string& resource) {
  std::string endpoint;
  {
    std::lock_guard lock(mutex_);
    endpoint = endpoints_[resource];
  }
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials()));
}

void FakeKubelet::setAssignments(std::map<std::string, std::vector<std::string>> held) {
  std::vector<PodHolding> pods;
  for (auto& [resource, ids] : held)
    pods.push_back({"default", "", resource, std::move(ids)});
  podResources_->set(std::move(pods));
}

void FakeKubelet::setPodAssignments(std::vector<PodHolding> held) {
  podResources_->set(std::move(held));
}

void FakeKubelet::setListSource(std::function<std::vector<PodHolding>()> source) {
  podResources_->setSource(std::move(source));
}

int FakeKubelet::listsAnswered() {
  return podResources_->answered();
}

bool FakeKubelet::waitForListsAfter(int count, std::chrono::milliseconds timeout) {
  return podResources_->waitForAnswersAfter(count, timeout);
}

void FakeKubelet::setListDelay(std::chrono::milliseconds delay) {
  podResources_->setDelay(delay);
}

void FakeKubelet::setListRefused(bool refused) {
  podResources_->setRefused(refused);
}

}  // namespace torus::testing
