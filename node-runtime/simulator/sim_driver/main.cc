// neuron-sim-driver: the Neuron driver's /sys/devices/virtual/neuron_device as the driver serves
// it, for the local cluster's simulated nodes (scripts/cluster/nodes.sh). A FUSE file system over
// the simulator's tree that answers as sysfs does where a plain directory would be kinder than a
// real node: each file has the driver's mode (core_count and connected_devices 0400, reset 0600:
// aws-neuron-driver neuron_cdev.c:2993,3002,3037; the metric files under info/, stats/ and
// neuron_coreM/ 0644: neuron_sysfs_metrics.c:486-488; the rest 0444), a file without write
// permission cannot be opened for writing (EACCES, root or not), and a write does what the
// driver's store does (sim_reset.h): neuronN/reset starts a reset that takes time, a metric's
// total, present or peak is cleared, other metric files accept the write and ignore it. Reads
// always reach the tree, so faults the tests write into it show at once, as a driver's counters do.
#define FUSE_USE_VERSION 31

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "common/config/command_line.h"
#include "common/config/log_settings.h"
#include "common/config/settings.h"
#include "node-runtime/simulator/sim_reset.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage = "neuron-sim-driver --tree=DIR --mountpoint=DIR [flags]";
constexpr const char* kDescription =
    "Serves a simulated node's neuron_device directory (DIR/sys/devices/virtual/neuron_device,\n"
    "written by neuron-ls --simulate-dir=DIR) at --mountpoint the way the Neuron driver 2.24.7.0\n"
    "does. Modes: core_count and connected_devices 0400, reset 0600, the metric files under\n"
    "info/, stats/ and neuron_coreM/ 0644, others 0444 (not writable, even by root).\n"
    "A write of anything to neuronN/reset starts a reset: it reads 0 at once, then after\n"
    "--reset-time 1 (READY) or 2 (INVALID); each core's reset_req_count counts it, a failed one\n"
    "its reset_fail_count, and one that ends READY repairs a pending HBM error\n"
    "(mem_ecc_repairable_uncorrected reads 0). The write succeeds but does nothing while a\n"
    "process holds /dev/neuronN open other than write-only, or while a reset is pending.\n"
    "Writing a metric's total, present or peak sets it to 0; info/notify_delay takes 0 or -1\n"
    "(for every device); other metric files accept a write and ignore it.\n"
    "DIR/simulated-driver/neuronN/reset says what that device's next reset does: \"fail\",\n"
    "\"slow MS\" or \"fail MS\" (neuron-ls --simulate-fault=reset-fail:N, reset-slow:N:MS).\n"
    "Runs in the foreground until SIGTERM or SIGINT, then unmounts. Needs /dev/fuse (root).\n\n"
    "Example (inside a node's mount namespace):\n"
    "  neuron-sim-driver --tree=/var/tmp/node/driver "
    "--mountpoint=/sys/devices/virtual/neuron_device";

struct Options {
  std::string tree;
  std::string mountpoint;
  std::int64_t resetMillis = 300;
  std::string procRoot = "/proc";
  std::string devRoot = "/dev";
  torus::log::Settings log{torus::log::Level::kInfo, 0, torus::log::Format::kText};
};

struct Served {
  fs::path source;  // the tree's neuron_device directory
  torus::simulator::SimulatedResets* resets = nullptr;
};

// The session the signal handlers stop, and whether one did (then the loop's end is a clean stop).
fuse_session* g_session = nullptr;
volatile std::sig_atomic_t g_stopSignal = 0;

void stopServing(int signal) {
  g_stopSignal = signal;
  if (g_session != nullptr) fuse_session_exit(g_session);
}

void handleStopSignals() {
  struct sigaction action {};
  action.sa_handler = stopServing;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGHUP, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

Served& served() {
  return *static_cast<Served*>(fuse_get_context()->private_data);
}

fs::path sourceOf(const char* path) {
  return served().source / fs::path(path).relative_path();
}

void* initFs(fuse_conn_info*, fuse_config* config) {
  // Nothing cached: every stat and read reaches the tree (sysfs has no page cache either).
  config->direct_io = 1;
  config->attr_timeout = 0;
  config->entry_timeout = 0;
  config->negative_timeout = 0;
  config->kernel_cache = 0;
  return fuse_get_context()->private_data;
}

int getattrFs(const char* path, struct stat* st, fuse_file_info*) {
  if (::lstat(sourceOf(path).c_str(), st) != 0) return -errno;
  st->st_uid = 0;
  st->st_gid = 0;
  if (S_ISREG(st->st_mode)) {
    // sysfs attributes: 4096 bytes whatever they hold, with the mode the driver registers.
    st->st_mode = S_IFREG | torus::simulator::driverAttribute(path).mode;
    st->st_size = 4096;
  } else if (S_ISDIR(st->st_mode)) {
    st->st_mode = S_IFDIR | 0755;
  }
  return 0;
}

int readlinkFs(const char* path, char* buffer, std::size_t size) {
  if (size == 0) return -EINVAL;
  const ssize_t length = ::readlink(sourceOf(path).c_str(), buffer, size - 1);
  if (length < 0) return -errno;
  buffer[length] = '\0';
  return 0;
}

int readdirFs(const char* path, void* buffer, fuse_fill_dir_t fill, off_t, fuse_file_info*,
              fuse_readdir_flags) {
  std::error_code ec;
  fs::directory_iterator entries(sourceOf(path), ec);
  if (ec) return -ec.value();
  fill(buffer, ".", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  fill(buffer, "..", nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  for (const fs::directory_entry& entry : entries) {
    fill(buffer, entry.path().filename().c_str(), nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
  }
  return 0;
}

// Whether the driver gave the file write permission (then it also gave it a store method).
bool writable(const torus::simulator::DriverAttribute& attribute) {
  return (attribute.mode & 0222) != 0;
}

int openFs(const char* path, fuse_file_info* info) {
  const bool writing = (info->flags & O_ACCMODE) != O_RDONLY;
  // kernfs refuses to open an attribute without write permission for writing, even to root.
  if (writing && !writable(torus::simulator::driverAttribute(path))) return -EACCES;
  struct stat st {};
  if (::lstat(sourceOf(path).c_str(), &st) != 0) return -errno;
  info->direct_io = 1;
  return 0;
}

int truncateFs(const char* path, off_t, fuse_file_info*) {
  // `echo 1 > reset` opens with O_TRUNC; sysfs ignores the truncation.
  return writable(torus::simulator::driverAttribute(path)) ? 0 : -EACCES;
}

int readFs(const char* path, char* buffer, std::size_t size, off_t offset, fuse_file_info*) {
  const torus::simulator::DriverAttribute attribute = torus::simulator::driverAttribute(path);
  if (attribute.store == torus::simulator::AttributeStore::kReset) {
    const std::string text = served().resets->read(attribute.device);
    if (offset >= static_cast<off_t>(text.size())) return 0;
    const std::size_t count = std::min(size, text.size() - static_cast<std::size_t>(offset));
    std::memcpy(buffer, text.data() + offset, count);
    return static_cast<int>(count);
  }
  // A reset that has ended by now shows in the counters it moves before they are read.
  if (attribute.device >= 0) served().resets->settle(attribute.device);
  const torus::UniqueFd fd(::open(sourceOf(path).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return -errno;
  const ssize_t count = ::pread(fd.get(), buffer, size, offset);
  return count < 0 ? -errno : static_cast<int>(count);
}

int writeFs(const char* path, const char* buffer, std::size_t size, off_t, fuse_file_info*) {
  using torus::simulator::AttributeStore;
  const torus::simulator::DriverAttribute attribute = torus::simulator::driverAttribute(path);
  const std::string_view text(buffer, size);
  switch (attribute.store) {
    case AttributeStore::kNone:
      return -EACCES;
    case AttributeStore::kReset:
      served().resets->write(attribute.device, text);
      break;
    case AttributeStore::kClearCounter:
    case AttributeStore::kNotifyDelay:
    case AttributeStore::kIgnored:
      served().resets->writeMetric(path, attribute.store, text);
      break;
  }
  // Every store the driver has returns the count it was given, whatever it did.
  return static_cast<int>(size);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  torus::config::SettingTable table("neuron-sim-driver");
  table.addString("tree", "", "", "DIR", "the simulated node's tree (neuron-ls --simulate-dir)",
                  &options.tree);
  table.addString("mountpoint", "", "", "DIR",
                  "where to serve its neuron_device directory (on a simulated node: "
                  "/sys/devices/virtual/neuron_device)",
                  &options.mountpoint);
  table.addDurationMillis("reset-time", "", "",
                          "how long a reset takes when no behaviour file says otherwise",
                          &options.resetMillis);
  table.addString("proc-root", "", "", "DIR", "whose processes may hold devices open",
                  &options.procRoot);
  table.addString("dev-root", "", "", "DIR", "where those processes open neuronN",
                  &options.devRoot);
  torus::config::addLogSettings(table, &options.log);
  const torus::config::CommandInfo info{"neuron-sim-driver", kUsage, kDescription, ""};
  if (auto exitCode = torus::config::parseCommandLine(table, info, argc, argv)) return *exitCode;
  torus::log::configure(options.log);

  if (options.tree.empty() || options.mountpoint.empty()) {
    std::fprintf(stderr, "neuron-sim-driver: --tree and --mountpoint are required (see --help)\n");
    return 2;
  }
  Served state;
  state.source = fs::path(options.tree) / "sys" / "devices" / "virtual" / "neuron_device";
  if (std::error_code ec; !fs::is_directory(state.source, ec)) {
    std::fprintf(stderr, "neuron-sim-driver: %s is not a directory: is %s a simulated tree?\n",
                 state.source.c_str(), options.tree.c_str());
    return 2;
  }
  torus::simulator::SimulatedResets resets({fs::path(options.tree),
                                            std::chrono::milliseconds(options.resetMillis),
                                            options.procRoot, fs::path(options.devRoot)});
  state.resets = &resets;

  fuse_operations operations{};
  operations.init = initFs;
  operations.getattr = getattrFs;
  operations.readlink = readlinkFs;
  operations.readdir = readdirFs;
  operations.open = openFs;
  operations.truncate = truncateFs;
  operations.read = readFs;
  operations.write = writeFs;

  // Every user may look, as in sysfs; the kernel applies the modes above (default_permissions).
  std::vector<std::string> fuseArgs = {"neuron-sim-driver", "-o",
                                       "allow_other,default_permissions,fsname=neuron_device"};
  std::vector<char*> fuseArgv;
  for (std::string& arg : fuseArgs)
    fuseArgv.push_back(arg.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(fuseArgv.size()), fuseArgv.data());
  // fuse_new copies the arguments it adds into memory of its own, freed with them.
  const struct FreeArgs {
    fuse_args* args;
    ~FreeArgs() { fuse_opt_free_args(args); }
  } freeArgs{&args};
  const std::unique_ptr<fuse, decltype(&fuse_destroy)> filesystem(
      fuse_new(&args, &operations, sizeof(operations), &state), &fuse_destroy);
  if (filesystem == nullptr) {
    std::fprintf(stderr, "neuron-sim-driver: cannot start FUSE (see above)\n");
    return 1;
  }
  if (fuse_mount(filesystem.get(), options.mountpoint.c_str()) != 0) {
    std::fprintf(stderr, "neuron-sim-driver: cannot mount at %s (needs /dev/fuse and root)\n",
                 options.mountpoint.c_str());
    return 1;
  }
  g_session = fuse_get_session(filesystem.get());
  handleStopSignals();
  TORUS_LOG(Info, Simulator, "serving the simulated driver's devices", {"tree", options.tree},
            {"mountpoint", options.mountpoint}, {"reset_ms", options.resetMillis});
  const int status = fuse_loop_mt(filesystem.get(), 0);
  fuse_unmount(filesystem.get());
  const auto counts = resets.counts();
  TORUS_LOG(Info, Simulator, "stopped", {"resets", counts.started},
            {"ignored_while_held", counts.ignoredWhileHeld},
            {"dropped_while_pending", counts.droppedWhilePending}, {"failed", counts.failed});
  return status == 0 || g_stopSignal != 0 ? 0 : 1;
}
