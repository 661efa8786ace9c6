// The holder scan before a reset, as the agent runs on a node: another process's open files can
// be read only with CAP_SYS_PTRACE over it, and with CAP_DAC_READ_SEARCH too when it runs as
// another user. Without them (the chart before both were granted) the scan used to see nobody
// and the reset went ahead on a device a process still held; now such processes are reported as
// unseen, the reset is refused with the reason, and nothing is written.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "node-runtime/reset/core_reset.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::testing {
namespace {

// A pipe whose ends close themselves; both invalid when it cannot be made.
struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
Pipe openPipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Runs `body` in a child process (still uid 0, as the agent runs) that keeps only the
// capabilities `keep` (CAP_* numbers below 32), and returns what it printed.
template <typename Body>
std::string runWithCapabilities(std::initializer_list<int> keep, Body body) {
  Pipe output = openPipe();
  if (!output.read) return "pipe: " + std::to_string(errno);
  const pid_t child = ::fork();
  if (child == 0) {
    output.read.reset();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3] = {};
    for (const int capability : keep) {
      sets[0].effective |= 1U << capability;
      sets[0].permitted |= 1U << capability;
    }
    std::string out = ::syscall(SYS_capset, &header, sets) == 0 ? body() : "capset failed";
    const ssize_t written = ::write(output.write.get(), out.data(), out.size());
    ::_exit(written == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  output.write.reset();
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = ::read(output.read.get(), buffer, sizeof(buffer))) > 0;)
    out.append(buffer, got);
  int status = 0;
  ::waitpid(child, &status, 0);
  return out;
}

// A workload process as on a node: it opened `node`, then runs as user 65532 (not the agent's
// uid) and stays dumpable, until the returned pipe end is closed. Its pid is in `pid`.
UniqueFd startHolderAsAnotherUser(const std::string& node, pid_t* pid) {
  Pipe ready = openPipe();
  Pipe release = openPipe();
  if (!ready.read || !release.read) return UniqueFd();
  *pid = ::fork();
  if (*pid == 0) {
    ready.read.reset();
    release.write.reset();
    // O_PATH: the simulated node has no driver to open (ENXIO); its /proc link is what counts.
    const int fd = ::open(node.c_str(), O_PATH);
    const bool dropped = fd >= 0 && ::setresgid(65532, 65532, 65532) == 0 &&
                         ::setresuid(65532, 65532, 65532) == 0 &&
                         ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0;
    const char answer = dropped ? 'y' : 'n';
    if (::write(ready.write.get(), &answer, 1) != 1) ::_exit(1);
    char ignored = 0;
    while (::read(release.read.get(), &ignored, 1) > 0) {
    }
    ::_exit(0);
  }
  ready.write.reset();
  release.read.reset();
  char answer = 0;
  if (*pid < 0 || ::read(ready.read.get(), &answer, 1) != 1 || answer != 'y') return UniqueFd();
  return std::move(release.write);
}

// An inf2.xlarge's driver files; the tests run as root, the agent's uid, and drop capabilities or
// change users from there.
class HolderScan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the agent's uid, and to switch users";
    auto dir = TempDir::create("holder-scan");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    simulator::SimulationSpec spec;
    spec.instanceType = "inf2.xlarge";
    auto tree = simulator::writeSimulatedTree(spec, dir_->path());
    ASSERT_TRUE(tree.ok()) << tree.error().message;
    roots_ = tree->roots();
    node_ = roots_.deviceNode(0).string();
  }

  std::unique_ptr<TempDir> dir_;
  discovery::DiscoveryRoots roots_;
  std::string node_;  // /dev/neuron0 of the tree
};

TEST_F(HolderScan, AProcessWhoseOpenFilesCannotBeReadIsUnseenAndBlocksTheReset) {
  const std::string& node = node_;
  const auto resetFile = roots_.neuronClass() / "neuron0" / "reset";
  ASSERT_TRUE(writeFile(resetFile, "1\n").ok());
  const auto resetBefore = std::filesystem::last_write_time(resetFile);

  // This process (every capability) holds the device, as a leaked workload process would.
  UniqueFd held(::open(node.c_str(), O_PATH | O_CLOEXEC));  // no driver to open: O_PATH
  ASSERT_TRUE(held) << node;
  const std::string self = std::to_string(::getpid());

  // With every capability the holder is seen.
  const reset::HolderScan privileged = reset::findHoldersOfAny("/proc", {node});
  ASSERT_TRUE(privileged.holders.contains(node));
  EXPECT_EQ(privileged.holders.at(node).front().pid, ::getpid());

  const std::string seen = runWithCapabilities({}, [&] {
    held.reset();  // the copy fork gave the child: only this test process holds the device
    const reset::HolderScan scan = reset::findHoldersOfAny("/proc", {node});
    bool holderUnseen = false;
    for (const auto& process : scan.unseen)
      holderUnseen |= std::to_string(process.pid) == self;
    std::string out = "holders=" + std::to_string(scan.holders.size()) +
                      " holder_unseen=" + (holderUnseen ? "yes" : "no") + "\n";
    reset::ResetPolicy policy;
    policy.attempts = 1;
    const auto result = reset::resetDevice(roots_, 0, policy);
    out += result ? std::string("reset=ok") : "reset=" + result.error().message;
    return out;
  });
  EXPECT_NE(seen.find("holders=0 holder_unseen=yes"), std::string::npos) << seen;
  EXPECT_NE(seen.find("reset=resetting neuron0: cannot tell whether a process holds it"),
            std::string::npos)
      << seen;
  EXPECT_NE(seen.find("CAP_SYS_PTRACE"), std::string::npos) << seen;
  EXPECT_EQ(std::filesystem::last_write_time(resetFile), resetBefore) << "a reset was written";
}

// A container may reach the device under another name: the host's /dev/neuron0 mapped to a path
// of its own, or a node it made itself. The driver counts the open all the same, and so does the
// scan: by the device number, not the name in /proc/PID/fd.
TEST_F(HolderScan, ADeviceOpenUnderAnotherNameIsHeld) {
  struct stat device {};
  ASSERT_EQ(::stat(node_.c_str(), &device), 0);
  if (!S_ISCHR(device.st_mode)) GTEST_SKIP() << "the simulated tree has no character devices";
  const std::string alias = (dir_->path() / "container-dev-neuron7").string();
  ASSERT_EQ(::mknod(alias.c_str(), S_IFCHR | 0600, device.st_rdev), 0) << std::strerror(errno);
  UniqueFd held(::open(alias.c_str(), O_PATH | O_CLOEXEC));  // no driver to open: O_PATH
  ASSERT_TRUE(held);
  const reset::HolderScan scan = reset::findHoldersOfAny("/proc", {node_});
  ASSERT_TRUE(scan.holders.contains(node_)) << "an open of the same device under another name";
  EXPECT_EQ(scan.holders.at(node_).front().pid, ::getpid());
  // Closed, it is free again: the match was the open, not the node's existence.
  held.reset();
  EXPECT_FALSE(reset::findHoldersOfAny("/proc", {node_}).holders.contains(node_));
}

// Why the chart grants both CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: a workload running as
// another user has a /proc/PID/fd that only its user may list, and links that only a tracer may
// read. With either capability alone its device stays unseen, with both it is found.
TEST_F(HolderScan, AnotherUsersProcessIsSeenOnlyWithBothCapabilities) {
  const std::string& node = node_;
  pid_t holder = 0;
  UniqueFd release = startHolderAsAnotherUser(node, &holder);
  ASSERT_TRUE(release) << "could not start the holder as uid 65532";
  const auto scanned = [&](std::initializer_list<int> keep) {
    return runWithCapabilities(keep, [&] {
      const reset::HolderScan scan = reset::findHoldersOfAny("/proc", {node});
      bool seen = false;
      bool unseen = false;
      if (const auto it = scan.holders.find(node); it != scan.holders.end()) {
        for (const auto& process : it->second)
          seen |= process.pid == holder;
      }
      for (const auto& process : scan.unseen)
        unseen |= process.pid == holder;
      return std::string(seen ? "seen" : unseen ? "unseen" : "missed");
    });
  };
  EXPECT_EQ(scanned({CAP_SYS_PTRACE}), "unseen");
  EXPECT_EQ(scanned({CAP_DAC_READ_SEARCH}), "unseen");
  EXPECT_EQ(scanned({CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH}), "seen");
  release.reset();
  int status = 0;
  EXPECT_EQ(::waitpid(holder, &status, 0), holder);
}

}  // namespace
}  // namespace torus::testing
