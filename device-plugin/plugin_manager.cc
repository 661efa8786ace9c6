#include "device-plugin/plugin_manager.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include <poll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "common/metrics/event_counters.h"
#include "device-plugin/kubelet_registration.h"

namespace torus::plugin {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kKubeletSocket = "kubelet.sock";

bool isSocket(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

// Which kubelet.sock is at `path`: kubelet deletes and re-creates it on every start, and the new
// one can get the old one's inode number (ext4 hands a freed inode out again at once), so the
// change time tells two sockets with the same number apart.
std::optional<SocketIdentity> socketIdentity(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode)) return std::nullopt;
  return SocketIdentity{info.st_dev, info.st_ino, info.st_ctim.tv_sec, info.st_ctim.tv_nsec};
}

// Whether a process accepts connections on the unix socket at `path` (a stale file refuses).
bool someoneServes(const std::string& path) {
  if (!isSocket(path)) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  return ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
}

}  // namespace

DevicePluginManager::DevicePluginManager(DevicePluginOptions options, kubelet::NodeView& node,
                                         SchedulerHandoff* handoff)
    : options_(std::move(options)),
      node_(node),
      handoff_(handoff),
      tracker_(options_.allocateGrace),
      report_(options_.resources),
      departed_(options_.podUid, options_.podStillRuns) {
  departures_ = tracker_.onChange(
      [this] { departed_.listed(node_.snapshot().node, tracker_.current().holders); });
}

std::function<Result<void>(const topology::CoreSet&)> DevicePluginManager::departedCheck() {
  if (!options_.podStillRuns) return {};
  return [this](const topology::CoreSet& cores) {
    return departed_.checkNoneRunsOn(node_.snapshot().node, cores);
  };
}

DevicePluginManager::~DevicePluginManager() {
  stop();
}

void DevicePluginManager::waitForPreviousAgent() const {
  // The agent this one replaces may still be draining (a DaemonSet starts the new pod while the
  // old one terminates). Serving our sockets now would make kubelet switch to us and then, when
  // the old agent's streams end, mark every id of ours Unhealthy (kubelet does not check which
  // endpoint disconnected) until our list next changes. So wait for it to go, bounded.
  const auto deadline = Clock::now() + options_.previousAgentWait;
  bool logged = false;
  for (const ResourceKind kind : options_.resources) {
    const std::string path = options_.pluginDir + "/" + socketName(kind);
    while (someoneServes(path)) {
      if (Clock::now() >= deadline) {
        TORUS_LOG(Warn, Plugin, "another process still serves our socket; taking it over",
                  {"socket", path});
        return;
      }
      if (!logged) {
        TORUS_LOG(Info, Plugin,
                  "another agent still serves our socket (the one this replaces, stopping); "
                  "waiting for it to go",
                  {"socket", path},
                  {"wait_ms", static_cast<std::int64_t>(options_.previousAgentWait.count())});
        logged = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

Result<void> DevicePluginManager::start() {
  waitForPreviousAgent();
  resetter_ = std::make_unique<ReleaseResetter>(node_, tracker_, departedCheck());
  poller_ = std::make_unique<PodResourcesPoller>(
      options_.podResourcesSocket, options_.podResourcesInterval, node_, tracker_,
      [this] {
        resetter_->kubeletAnswered();
        return handoff_ != nullptr && handoff_->kubeletHolds(tracker_.current().holders);
      },
      &window_);
  // Kubelet hears our lists only once we know who holds what. After an agent restart its pods
  // hold ids through both resources: lists sent before that would call a device whose cores a
  // pod holds Healthy (kubelet could give it out twice), and the Node's report would leave out
  // ids kubelet is still tearing down (the extender would offer them, kubelet refuse the pod).
  if (!poller_->waitForFirstList(options_.firstListWait)) {
    TORUS_LOG(Warn, Plugin,
              "serving before kubelet's pod-resources answered: until it does, ids held through "
              "the other resource count only from this agent's own Allocate calls",
              {"socket", options_.podResourcesSocket},
              {"waited_ms", static_cast<std::int64_t>(options_.firstListWait.count())});
  }
  std::error_code ec;
  if (std::filesystem::is_directory(options_.pluginDir, ec)) {
    TORUS_RETURN_IF_ERROR(restartServers(), "serving");
  } else {
    TORUS_LOG(Warn, Plugin, "device-plugin directory missing; waiting for kubelet to create it",
              {"dir", options_.pluginDir});
  }
  watcher_ = std::jthread([this](std::stop_token stop) { watch(stop); });
  return okResult();
}

std::optional<contracts::KubeletUnavailable> DevicePluginManager::kubeletUnavailable() const {
  if (!tracker_.kubeletListed()) return std::nullopt;
  auto unavailable = report_.current();
  if (!unavailable) return std::nullopt;
  const Assignments held = tracker_.current();
  for (const ResourceKind kind : options_.resources) {
    if (const auto ids = held.held.find(kind); ids != held.held.end()) {
      (*unavailable)[std::string(resourceName(kind))] |= ids->second;
    }
  }
  return unavailable;
}

void DevicePluginManager::podEnded() {
  std::lock_guard lock(mutex_);
  if (poller_) poller_->pokeNow();
}

void DevicePluginManager::stop() {
  if (watcher_.joinable()) {
    watcher_.request_stop();
    watcher_.join();
  }
  std::lock_guard lock(mutex_);
  servers_.clear();
  poller_.reset();
  resetter_.reset();
}

Result<void> DevicePluginManager::restartServers() {
  std::lock_guard lock(mutex_);
  servers_.clear();  // stops them and removes their sockets
  for (const ResourceKind kind : options_.resources) {
    auto service = std::make_unique<PluginService>(
        kind, node_, tracker_,
        [this] {
          if (poller_) poller_->pokeAfterAllocate();
        },
        handoff_, &report_,
        TenancyGuard{&window_,
                     [this]() -> Result<Assignments> {
                       // Servers live only while the poller does (both go in stop()).
                       if (!poller_) return makeError(ErrorCode::kUnavailable, "not started");
                       auto listed = poller_->listNow(options_.tenantCheckWait);
                       // Fresher than the tracker: a pod deleted since its last List departs now.
                       if (listed) departed_.listed(node_.snapshot().node, listed->holders);
                       return listed;
                     },
                     options_.nodeEvent, departedCheck()});
    auto server =
        PluginServer::start(options_.pluginDir + "/" + socketName(kind), std::move(service));
    if (!server) return std::move(server).error();
    servers_.push_back(std::move(*server));
  }
  TORUS_LOG(Info, Plugin, "serving device plugins", {"dir", options_.pluginDir},
            {"resources", static_cast<int>(options_.resources.size())});
  return okResult();
}

bool DevicePluginManager::ourSocketsServed() const {
  {
    std::lock_guard lock(mutex_);
    if (servers_.empty()) return true;  // not serving (the directory went): nothing to miss
  }
  return std::ranges::all_of(options_.resources, [&](ResourceKind kind) {
    return isSocket(options_.pluginDir + "/" + socketName(kind));
  });
}

std::optional<SocketIdentity> DevicePluginManager::registerAll(std::set<ResourceKind>& registered) {
  const std::string kubelet = options_.pluginDir + "/" + std::string(kKubeletSocket);
  // Taken before registering: if kubelet restarts meanwhile, the new socket differs from this one
  // and its creation event registers again.
  const auto identity = socketIdentity(kubelet);
  if (!identity) {
    // The directory watch notices kubelet.sock appearing; no need to knock until then.
    TORUS_LOG(Debug, Plugin, "kubelet.sock not present yet", {"path", kubelet});
    return std::nullopt;
  }
  const auto started = Clock::now();
  for (const ResourceKind kind : options_.resources) {
    // Kubelet refuses a second registration of a plugin it is still connected to, so a retry
    // after a partial failure registers only what it has not accepted yet.
    if (registered.contains(kind)) continue;
    auto accepted = registerWithKubelet(kubelet, socketName(kind), kind, options_.registerTimeout);
    metrics::processCounters().add(
        metrics::names::kRegistrationsTotal,
        {{"resource", std::string(resourceName(kind))}, {"result", accepted ? "ok" : "error"}});
    if (!accepted) {
      TORUS_LOG(Warn, Plugin, "kubelet registration failed", {"resource", resourceName(kind)},
                {"error", accepted.error().message});
      return std::nullopt;
    }
    registered.insert(kind);
    TORUS_LOG(Info, Plugin, "registered with kubelet", {"resource", resourceName(kind)},
              {"endpoint", socketName(kind)},
              {"elapsed_ms",
               static_cast<std::int64_t>(
                   std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started)
                       .count())});
  }
  return identity;
}

void DevicePluginManager::watch(std::stop_token stop) {
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  int directoryWatch = -1;  // inotify watch of the plugin directory; -1 while it is gone
  bool needRegister = true;
  // The kinds kubelet accepted since our servers last (re)started, and the kubelet.sock they were
  // registered through once all were: a creation event for that same socket (the watch can see
  // kubelet create it after we registered through it) is no restart of kubelet.
  std::set<ResourceKind> registered;
  std::optional<SocketIdentity> registeredThrough;
  auto backoff = std::chrono::milliseconds(1000);
  Clock::time_point nextAttempt = Clock::now();
  const auto restart = [&](const char* why) {
    TORUS_LOG(Info, Plugin, why, {"dir", options_.pluginDir});
    if (auto restarted = restartServers(); !restarted) {
      TORUS_LOG(Error, Plugin, "cannot restart device plugin servers",
                {"error", restarted.error().message});
    }
    needRegister = true;
    registered.clear();
    registeredThrough.reset();
    backoff = std::chrono::milliseconds(1000);
    nextAttempt = Clock::now();
  };

  while (!stop.stop_requested()) {
    if (directoryWatch < 0 && inotify) {
      directoryWatch =
          ::inotify_add_watch(inotify.get(), options_.pluginDir.c_str(),
                              IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF);
      if (directoryWatch >= 0) {
        bool serving = false;
        {
          std::lock_guard lock(mutex_);
          serving = !servers_.empty();
        }
        if (!serving) restart("device-plugin directory appeared; serving");
      }
    }
    if (directoryWatch >= 0 && !needRegister && !ourSocketsServed()) {
      // Removed where the watch could not see it: before the watch existed (a kubelet restart
      // between serving and watching), or moved away. kubelet cannot reach us until we serve.
      restart("a plugin socket of ours is missing; serving and registering again");
    }
    if (needRegister && Clock::now() >= nextAttempt) {
      registeredThrough = registerAll(registered);
      if (registeredThrough) {
        needRegister = false;
      } else {
        nextAttempt = Clock::now() + backoff;
        TORUS_LOG(Warn, Plugin, "not registered with kubelet yet; retrying",
                  {"kubelet_socket", options_.pluginDir + "/" + std::string(kKubeletSocket)},
                  {"retry_ms", static_cast<std::int64_t>(backoff.count())});
        backoff = std::min(backoff * 2, std::chrono::milliseconds(30'000));
      }
    }
    auto waitMs = std::chrono::milliseconds(500);
    if (needRegister) {
      waitMs = std::clamp(
          std::chrono::duration_cast<std::chrono::milliseconds>(nextAttempt - Clock::now()),
          std::chrono::milliseconds(0), waitMs);
    }
    pollfd descriptor{inotify.get(), POLLIN, 0};
    if (::poll(&descriptor, 1, static_cast<int>(waitMs.count())) <= 0) continue;
    alignas(inotify_event) char buffer[4096];
    const ssize_t length = ::read(inotify.get(), buffer, sizeof(buffer));
    bool kubeletRestarted = false;
    bool ownSocketRemoved = false;
    for (ssize_t offset = 0; offset < length;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      const std::string name = event->len > 0 ? event->name : "";
      if ((event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0) {
        if (directoryWatch >= 0) {
          ::inotify_rm_watch(inotify.get(), directoryWatch);
          directoryWatch = -1;
          // Our sockets went with the directory; serve afresh once it is back.
          std::lock_guard lock(mutex_);
          servers_.clear();
          TORUS_LOG(Warn, Plugin, "device-plugin directory removed; waiting for it to return",
                    {"dir", options_.pluginDir});
        }
        continue;
      }
      if ((event->mask & (IN_CREATE | IN_MOVED_TO)) != 0 && name == kKubeletSocket) {
        const std::string kubelet = options_.pluginDir + "/" + name;
        if (registeredThrough && socketIdentity(kubelet) == registeredThrough) {
          TORUS_LOG(Debug, Plugin, "kubelet.sock event for the socket we registered through",
                    {"path", kubelet});
        } else {
          kubeletRestarted = true;
        }
      }
      if ((event->mask & IN_DELETE) != 0) {
        for (const ResourceKind kind : options_.resources) {
          // Our own restarts delete and recreate the socket; only a socket still missing counts.
          if (name == socketName(kind) && !isSocket(options_.pluginDir + "/" + name)) {
            ownSocketRemoved = true;
          }
        }
      }
    }
    if (kubeletRestarted) {
      restart("kubelet.sock re-created (kubelet restarted); restarting and re-registering");
    } else if (ownSocketRemoved) {
      restart("our plugin socket was removed; restarting and re-registering");
    }
  }
}

}  // namespace torus::plugin
