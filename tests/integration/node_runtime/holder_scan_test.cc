// The holder scan before a reset, as the agent runs on a node: another process's open files can
// be read only with CAP_SYS_PTRACE over it, and with CAP_DAC_READ_SEARCH too when it runs as
// another user. Without them (the chart before both were granted) the scan used to see nobody
// and the reset went ahead on a device a process still held; now such processes are reported as
// unseen, the reset is refused with the reason, and nothing is written.
#include <cerrno>
#include <filesystem>
#include <initializer_list>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"
#include "common/base/unique_fd.h"
#include "node-runtime/reset/core_reset.h"
#include "node-runtime/simulator/sim_tree.h"

namespace torus::testing {
namespace {

// Runs `body` in a child process (still uid 0, as the agent runs) that keeps only the
// capabilities `keep` (CAP_* numbers below 32), and returns what it printed.
template <typename Body>
std::string runWithCapabilities(std::initializer_list<int> keep, Body body) {
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) return "pipe: " + std::to_string(errno);
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  const pid_t child = ::fork();
  if (child == 0) {
    readEnd.reset();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct sets[_LINUX_CAPABILITY_U32S_3] = {};
    for (const int capability : keep) {
      sets[0].effective |= 1U << capability;
      sets[0].permitted |= 1U << capability;
    }
    std::string out = ::syscall(SYS_capset, &header, sets) == 0 ? body() : "capset failed";
    const ssize_t written = ::write(writeEnd.get(), out.data(), out.size());
    ::_exit(written == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  writeEnd.reset();
  std::string out;
  char buffer[4096];
  for (ssize_t got; (got = ::read(readEnd.get(), buffer, sizeof(buffer))) > 0;)
    out.append(buffer, got);
  int status = 0;
  ::waitpid(child, &status, 0);
  return out;
}

// A workload process as on a node: it opened `node`, then runs as user 65532 (not the agent's
// uid) and stays dumpable, until the returned pipe end is closed. Its pid is in `pid`.
UniqueFd startHolderAsAnotherUser(const std::string& node, pid_t* pid) {
  int ready[2];
  int release[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return UniqueFd();
  if (::pipe2(release, O_CLOEXEC) != 0) {
    ::close(ready[0]);
    ::close(ready[1]);
    return UniqueFd();
  }
  UniqueFd readyRead(ready[0]), readyWrite(ready[1]);
  UniqueFd releaseRead(release[0]), releaseWrite(release[1]);
  *pid = ::fork();
  if (*pid == 0) {
    readyRead.reset();
    releaseWrite.reset();
    const int fd = ::open(node.c_str(), O_RDONLY);
    const bool dropped = fd >= 0 && ::setresgid(65532, 65532, 65532) == 0 &&
                         ::setresuid(65532, 65532, 65532) == 0 &&
                         ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0;
    const char answer = dropped ? 'y' : 'n';
    if (::write(readyWrite.get(), &answer, 1) != 1) ::_exit(1);
    char ignored = 0;
    while (::read(releaseRead.get(), &ignored, 1) > 0) {
    }
    ::_exit(0);
  }
  readyWrite.reset();
  releaseRead.reset();
  char answer = 0;
  if (*pid < 0 || ::read(readyRead.get(), &answer, 1) != 1 || answer != 'y') return UniqueFd();
  return releaseWrite;
}

TEST(HolderScan, AProcessWhoseOpenFilesCannotBeReadIsUnseenAndBlocksTheReset) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the agent's uid, with capabilities to drop";
  auto dir = TempDir::create("holder-scan");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  const std::string node = tree->roots().deviceNode(0).string();
  const auto resetFile = tree->roots().neuronClass() / "neuron0" / "reset";
  ASSERT_TRUE(writeFile(resetFile, "1\n").ok());
  const auto resetBefore = std::filesystem::last_write_time(resetFile);

  // This process (every capability) holds the device, as a leaked workload process would.
  UniqueFd held(::open(node.c_str(), O_RDONLY | O_CLOEXEC));
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
    const auto result = reset::resetDevice(tree->roots(), 0, policy);
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

}  // namespace
}  // namespace torus::testing

namespace torus::testing {
namespace {

// Why the chart grants both CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: a workload running as
// another user has a /proc/PID/fd that only its user may list, and links that only a tracer may
// read. With either capability alone its device stays unseen, with both it is found.
TEST(HolderScan, AnotherUsersProcessIsSeenOnlyWithBothCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: to run a holder as another user";
  auto dir = TempDir::create("holder-scan-user");
  ASSERT_TRUE(dir.ok());
  simulator::SimulationSpec spec;
  spec.instanceType = "inf2.xlarge";
  auto tree = simulator::writeSimulatedTree(spec, dir->path());
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  const std::string node = tree->roots().deviceNode(0).string();
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
