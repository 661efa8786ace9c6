#include "tests/integration/node_runtime/driver_served_tree.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "node-runtime/reset/core_reset.h"

namespace torus::testing {
namespace {

namespace fs = std::filesystem;

Error mountError(const std::string& what, const fs::path& from, const fs::path& to) {
  return makeError(ErrorCode::kInternal,
                   what + " " + from.string() + " on " + to.string() + ": " + std::strerror(errno));
}

}  // namespace

std::optional<std::string> DriverServedTree::unusableBecause() {
  if (::geteuid() != 0) return "needs root: mounting FUSE and bind mounts";
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return "no usable /dev/fuse";
  if (::access(binaryPath("neuron-sim-driver").c_str(), X_OK) != 0) {
    return "no " + binaryPath("neuron-sim-driver") + " (built where libfuse3 is)";
  }
  return std::nullopt;
}

Result<std::unique_ptr<DriverServedTree>> DriverServedTree::start(
    const simulator::SimulationSpec& spec, const fs::path& dir,
    std::chrono::milliseconds resetTime) {
  auto served = std::make_unique<DriverServedTree>();
  served->tree_ = dir / "tree";
  served->view_ = dir / "view";
  served->mountpoint_ = dir / "driver";
  auto tree = simulator::writeSimulatedTree(spec, served->tree_);
  if (!tree) return std::move(tree).error();
  std::error_code ec;
  fs::create_directories(served->view_, ec);
  fs::create_directories(served->mountpoint_, ec);
  if (::mount(served->tree_.c_str(), served->view_.c_str(), nullptr, MS_BIND | MS_REC, nullptr) !=
      0) {
    return mountError("binding", served->tree_, served->view_);
  }
  served->bound_.push_back(served->view_);
  served->driver_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{binaryPath("neuron-sim-driver"), "--tree=" + served->tree_.string(),
                               "--mountpoint=" + served->mountpoint_.string(),
                               "--reset-time=" + std::to_string(resetTime.count()) + "ms",
                               "--dev-root=" + tree->roots().dev.string()});
  if (!served->driver_->waitForStderr("serving", std::chrono::seconds(10))) {
    return makeError(ErrorCode::kInternal,
                     "neuron-sim-driver did not start: " + served->driver_->stderrText());
  }
  const fs::path devices = served->view_ / "sys" / "devices" / "virtual" / "neuron_device";
  for (const fs::directory_entry& entry : fs::directory_iterator(devices, ec)) {
    const fs::path target = entry.path() / "reset";
    const fs::path source = served->mountpoint_ / entry.path().filename() / "reset";
    if (!fs::exists(target, ec)) continue;
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return mountError("binding", source, target);
    }
    served->bound_.push_back(target);
  }
  return served;
}

DriverServedTree::~DriverServedTree() {
  unmount();
}

void DriverServedTree::unmount() {
  // The file binds first, then the view; lazily, as a test may still have a file open.
  for (auto it = bound_.rbegin(); it != bound_.rend(); ++it) {
    ::umount2(it->c_str(), MNT_DETACH);
  }
  bound_.clear();
  if (driver_ != nullptr) {
    driver_->signal(SIGTERM);
    if (!driver_->waitExit(std::chrono::seconds(10))) driver_->signal(SIGKILL);
    driver_.reset();
  }
}

std::uint64_t DriverServedTree::resetsOf(int device) const {
  return reset::resetRequestCount(discovery::DiscoveryRoots::under(tree_), device).value_or(0);
}

std::string DriverServedTree::driverLog() const {
  return driver_ != nullptr ? driver_->stderrText() : std::string();
}

}  // namespace torus::testing
