#include "dra-driver/kubelet/kubelet_plugin.h"

#include <chrono>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "common/contracts/dra_names.h"
#include "common/kubelet/unix_address.h"
#include "dra-driver/kubelet/dra_service.h"
#include "dra-driver/kubelet/health_service.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace torus::dra {
namespace {

namespace reg = ::pluginregistration;

constexpr auto kWatchdogPeriod = std::chrono::seconds(2);
constexpr std::size_t kMaxUnixPathBytes = 107;

class RegistrationService final : public reg::Registration::Service {
 public:
  using Report = std::function<void(bool, const std::string&)>;
  RegistrationService(std::string endpoint, Report report)
      : endpoint_(std::move(endpoint)), report_(std::move(report)) {}

  grpc::Status GetInfo(grpc::ServerContext*, const reg::InfoRequest*,
                       reg::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(std::string(kDriverName));
    info->set_endpoint(endpoint_);
    info->add_supported_versions(kServiceV1);
    info->add_supported_versions(kServiceV1beta1);
    info->add_supported_versions(kHealthServiceV1);
    info->add_supported_versions(kHealthServiceV1alpha1);
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const reg::RegistrationStatus* status,
                                        reg::RegistrationStatusResponse*) override {
    report_(status->plugin_registered(), status->error());
    return grpc::Status::OK;
  }

 private:
  std::string endpoint_;
  Report report_;
};

// Replaces a stale socket from an earlier run; refuses to delete anything that is not a socket.
Result<void> clearSocketPath(const std::filesystem::path& path) {
  if (path.string().size() > kMaxUnixPathBytes) {
    return makeError(ErrorCode::kInvalidArgument,
                     "socket path longer than 107 bytes: " + path.string());
  }
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return makeError(ErrorCode::kUnavailable,
                     path.parent_path().string() + ": cannot create: " + ec.message());
  }
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      return makeError(ErrorCode::kFailedPrecondition,
                       path.string() + " exists and is not a socket; refusing to replace it");
    }
    ::unlink(path.c_str());
  }
  return okResult();
}

Result<std::unique_ptr<grpc::Server>> serveOn(const std::filesystem::path& path,
                                              const std::vector<grpc::Service*>& services) {
  TORUS_RETURN_IF_ERROR(clearSocketPath(path), "serving the DRA plugin");
  grpc::ServerBuilder builder;
  builder.AddListeningPort(kubelet::unixAddress(path.string()), grpc::InsecureServerCredentials());
  for (grpc::Service* service : services)
    builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return makeError(ErrorCode::kUnavailable, "cannot serve on " + path.string());
  return server;
}

bool isSocket(const std::filesystem::path& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

}  // namespace

struct KubeletPlugin::Servers {
  std::unique_ptr<grpc::Service> v1;
  std::unique_ptr<grpc::Service> v1beta1;
  std::unique_ptr<grpc::Service> healthV1;
  std::unique_ptr<grpc::Service> healthV1alpha1;
  std::unique_ptr<RegistrationService> registration;
  std::unique_ptr<grpc::Server> dra;
  std::unique_ptr<grpc::Server> registry;

  ~Servers() {
    // Registration first: kubelet stops calling before the DRA socket goes.
    const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(2);
    if (registry) registry->Shutdown(deadline);
    if (dra) dra->Shutdown(deadline);
  }
};

Result<std::unique_ptr<KubeletPlugin>> KubeletPlugin::start(KubeletPluginOptions options,
                                                            ClaimDriver& driver,
                                                            ObjectReader claims,
                                                            kubelet::NodeView& node,
                                                            std::string pool) {
  auto plugin = std::make_unique<KubeletPlugin>(std::move(options), driver, std::move(claims), node,
                                                std::move(pool));
  {
    std::lock_guard lock(plugin->mutex_);
    TORUS_RETURN_IF_ERROR(plugin->serve(), "starting the DRA kubelet plugin");
  }
  plugin->watchdog_ =
      std::jthread([raw = plugin.get()](std::stop_token stop) { raw->watch(stop); });
  TORUS_LOG(Info, Dra, "DRA plugin serving; waiting for kubelet to register it",
            {"driver", std::string(kDriverName)}, {"endpoint", plugin->draSocket().string()},
            {"registration", plugin->registrationSocket().string()});
  return plugin;
}

KubeletPlugin::KubeletPlugin(KubeletPluginOptions options, ClaimDriver& driver, ObjectReader claims,
                             kubelet::NodeView& node, std::string pool)
    : options_(std::move(options)),
      driver_(driver),
      claims_(std::move(claims)),
      node_(node),
      pool_(std::move(pool)) {}

KubeletPlugin::~KubeletPlugin() {
  stop();
}

std::filesystem::path KubeletPlugin::draSocket() const {
  return options_.pluginsDir / std::string(kDriverName) / "dra.sock";
}

std::filesystem::path KubeletPlugin::registrationSocket() const {
  return options_.registryDir / (std::string(kDriverName) + "-reg.sock");
}

Result<void> KubeletPlugin::serve() {
  servers_.reset();
  auto servers = std::make_unique<Servers>();
  servers->v1 = makeDraServiceV1(driver_, claims_);
  servers->v1beta1 = makeDraServiceV1beta1(driver_, claims_);
  servers->healthV1 = makeHealthServiceV1(node_, pool_);
  servers->healthV1alpha1 = makeHealthServiceV1alpha1(node_, pool_);
  auto dra = serveOn(draSocket(), {servers->v1.get(), servers->v1beta1.get(),
                                   servers->healthV1.get(), servers->healthV1alpha1.get()});
  if (!dra) return std::move(dra).error();
  servers->dra = std::move(*dra);
  servers->registration = std::make_unique<RegistrationService>(
      draSocket().string(),
      [this](bool registered, const std::string& error) { registrationStatus(registered, error); });
  // The registration socket comes last: kubelet may dial the endpoint as soon as it sees it.
  auto registry = serveOn(registrationSocket(), {servers->registration.get()});
  if (!registry) return std::move(registry).error();
  servers->registry = std::move(*registry);
  servers_ = std::move(servers);
  return okResult();
}

void KubeletPlugin::registrationStatus(bool registered, const std::string& error) {
  registered_ = registered;
  if (registered) {
    TORUS_LOG(Info, Dra, "kubelet registered the DRA plugin", {"driver", std::string(kDriverName)});
  } else {
    TORUS_LOG(Error, Dra, "kubelet refused the DRA plugin", {"error", error});
  }
}

void KubeletPlugin::watch(std::stop_token stop) {
  while (!sleepUntilStopped(stop, kWatchdogPeriod)) {
    std::lock_guard lock(mutex_);
    if (isSocket(draSocket()) && isSocket(registrationSocket())) continue;
    TORUS_LOG(Warn, Dra, "a DRA plugin socket disappeared; serving again so kubelet re-registers",
              {"endpoint", draSocket().string()}, {"registration", registrationSocket().string()});
    registered_ = false;
    if (auto served = serve(); !served) {
      TORUS_LOG(Error, Dra, "cannot serve the DRA plugin again; retrying",
                {"error", served.error().message});
    }
  }
}

std::string KubeletPlugin::notReadyReason() const {
  for (const std::filesystem::path& socket : {draSocket(), registrationSocket()}) {
    if (!isSocket(socket))
      return socket.string() + " is not a socket we serve (being served again)";
  }
  if (!registered_) return "kubelet has not registered the DRA plugin " + draSocket().string();
  return "";
}

void KubeletPlugin::stop() {
  if (watchdog_.joinable()) {
    watchdog_.request_stop();
    watchdog_.join();
  }
  std::lock_guard lock(mutex_);
  if (!servers_) return;
  servers_.reset();
  ::unlink(registrationSocket().c_str());
  ::unlink(draSocket().c_str());
}

}  // namespace torus::dra
