// The holder scan before a reset, as the agent runs on a node: another process's open files can
// be read only with CAP_SYS_PTRACE over it. Without it (the chart before SYS_PTRACE was granted)
// the scan used to see nobody and the reset went ahead on a device a process still held; now such
// processes are reported as unseen, the reset is refused with the reason, and nothing is written.
#include <cerrno>
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
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

// Runs `body` in a child process stripped of every capability (still uid 0, as the agent runs)
// and returns what it printed.
template <typename Body>
std::string runWithoutCapabilities(Body body) {
  int pipeFds[2];
  if (::pipe(pipeFds) != 0) return "pipe: " + std::to_string(errno);
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  const pid_t child = ::fork();
  if (child == 0) {
    readEnd.reset();
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    std::string out = ::syscall(SYS_capset, &header, none) == 0 ? body() : "capset failed";
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

  const std::string seen = runWithoutCapabilities([&] {
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
