// The probes of the agent's start-up self-check against the real system calls (granted here, as
// root) and with the errno a security module or a dropped capability answers injected at the
// same call: each denial is named with what was refused and why, and a grant is never named.
#include "node-runtime/agent/grant_check.h"

#include <cerrno>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"

namespace torus::agent {
namespace {

namespace fs = std::filesystem;

// The real calls, but `refuse` answers `error` for paths that contain it.
GrantSyscalls refusing(const std::string& refuse, int error, bool onReadlink = false) {
  GrantSyscalls calls = systemGrantSyscalls();
  const GrantSyscalls real = calls;
  if (onReadlink) {
    calls.readlink = [=](const char* path, char* buffer, size_t size) -> ssize_t {
      if (std::string(path).find(refuse) != std::string::npos) {
        errno = error;
        return -1;
      }
      return real.readlink(path, buffer, size);
    };
  } else {
    calls.open = [=](const char* path, int flags, mode_t mode) {
      if (std::string(path).find(refuse) != std::string::npos) {
        errno = error;
        return -1;
      }
      return real.open(path, flags, mode);
    };
  }
  return calls;
}

TEST(GrantCheck, AResetFileOpenedForWritingIsNotWritten) {
  auto dir = TempDir::create("grant");
  ASSERT_TRUE(dir.ok());
  const fs::path reset = dir->path() / "reset";
  ASSERT_TRUE(writeFile(reset, "1\n").ok());
  EXPECT_TRUE(probeWriteOpen(reset, systemGrantSyscalls()).ok());
  EXPECT_EQ(*readSmallFile(reset), "1\n");
  // AppArmor's `deny /sys/[^f]*/** w` answers EACCES at the open.
  const auto refused = probeWriteOpen(reset, refusing("reset", EACCES));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "opening " + reset.string() + " for writing: Permission denied");
}

TEST(GrantCheck, TheProcessScanNeedsToListAndToReadTheLinks) {
  EXPECT_TRUE(probeProcessScan("/proc", systemGrantSyscalls()).ok());
  // No DAC_READ_SEARCH for another uid's directory: the listing is refused.
  const auto unlisted = probeProcessScan("/proc", refusing("/proc/1/fd", EACCES));
  ASSERT_FALSE(unlisted.ok());
  EXPECT_EQ(unlisted.error().message, "listing /proc/1/fd: Permission denied");
  // A ptrace read refused (no SYS_PTRACE, or AppArmor's ptrace rule): the link is unreadable.
  const auto unread = probeProcessScan("/proc", refusing("/proc/1/fd/", EPERM, true));
  ASSERT_FALSE(unread.ok());
  EXPECT_NE(unread.error().message.find("reading the link /proc/1/fd/"), std::string::npos);
  EXPECT_NE(unread.error().message.find("Operation not permitted"), std::string::npos);
}

// With hostPID off, pid 1 is the agent's own container's first process: readable, but the scan
// would see no other tenant. Its mount namespace is the agent's, and the probe says so.
TEST(GrantCheck, TheProcessScanIsDeniedWhenPidOneIsInTheAgentsOwnContainer) {
  GrantSyscalls calls = systemGrantSyscalls();
  const GrantSyscalls real = calls;
  calls.readlink = [=](const char* path, char* buffer, size_t size) -> ssize_t {
    if (std::string(path) == "/proc/1/ns/mnt")
      return real.readlink("/proc/self/ns/mnt", buffer, size);
    return real.readlink(path, buffer, size);
  };
  const auto alone = probeProcessScan("/proc", calls);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("pid 1 shares the agent's mount namespace (mnt:["),
            std::string::npos)
      << alone.error().message;
  EXPECT_NE(alone.error().message.find("(hostPID off)"), std::string::npos);
  // The namespace unreadable is a denial too, not a pass.
  const auto unread = probeProcessScan("/proc", refusing("/proc/1/ns/mnt", EACCES, true));
  ASSERT_FALSE(unread.ok());
  EXPECT_EQ(unread.error().message, "reading the link /proc/1/ns/mnt: Permission denied");
}

// Under AppArmor the traced process's profile is asked too: containerd's default lets only its
// peers read its processes, so an agent under its own profile reads pid 1 (unconfined) and no
// workload. The probe reads one process confined by another profile than the agent's. A /proc as
// the agent sees it under the shipped profile, with one workload under containerd's.
TEST(GrantCheck, AWorkloadUnderAnotherProfileMustBeReadableToo) {
  auto dir = TempDir::create("grant-proc");
  ASSERT_TRUE(dir.ok());
  const fs::path proc = dir->path();
  const auto process = [&](const std::string& pid, const std::string& label,
                           const std::string& mountNamespace) {
    fs::create_directories(proc / pid / "fd");
    fs::create_directories(proc / pid / "ns");
    fs::create_directories(proc / pid / "attr");
    fs::create_symlink("/dev/null", proc / pid / "fd" / "0");
    fs::create_symlink(mountNamespace, proc / pid / "ns" / "mnt");
    ASSERT_TRUE(writeFile(proc / pid / "attr" / "current", label + "\n").ok());
  };
  process("1", "unconfined", "mnt:[1]");
  process("self", "torus-node-agent (enforce)", "mnt:[2]");
  process("40", "torus-node-agent (enforce)", "mnt:[2]");  // the agent itself: not a peer
  process("41", "unconfined", "mnt:[3]");
  process("42", "cri-containerd.apparmor.d (enforce)", "mnt:[4]");
  EXPECT_TRUE(probeProcessScan(proc, systemGrantSyscalls()).ok());
  const auto refused = probeProcessScan(proc, refusing("/42/fd/", EACCES, true));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "reading the link " + (proc / "42" / "fd" / "0").string() +
                ": Permission denied (a process confined by cri-containerd.apparmor.d; the agent, "
                "under torus-node-agent, may not read it)");
  // Pid 1 readable and the others not, with no security module labelling them: nothing to ask.
  fs::remove(proc / "42" / "attr" / "current");
  EXPECT_TRUE(probeProcessScan(proc, refusing("/42/fd/", EACCES, true)).ok());
}

TEST(GrantCheck, AKubeletDirectoryProbeLeavesNothingBehind) {
  auto dir = TempDir::create("grant");
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(probeCreateIn(dir->path(), systemGrantSyscalls()).ok());
  EXPECT_TRUE(fs::is_empty(dir->path()));
  const auto refused = probeCreateIn(dir->path(), refusing(".torus-probe", EACCES));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "creating a file in " + dir->path().string() + ": Permission denied");
}

TEST(GrantCheck, OnlyDeniedGrantsAreNamedEachWithItsFix) {
  const std::vector<Grant> grants = {
      {"reset", "the writable mount", [] { return okResult(); }},
      {"kernel log", "CAP_SYSLOG",
       []() -> Result<void> { return makeError(ErrorCode::kPermissionDenied, "EPERM"); }},
  };
  const auto denied = checkGrants(grants);
  ASSERT_EQ(denied.size(), 1U);
  EXPECT_EQ(describeDenied(denied), "kernel log: EPERM (fix: CAP_SYSLOG)");
  const std::string metrics = renderGrantMetrics(grants, denied);
  EXPECT_NE(metrics.find("torus_agent_grant_denied{grant=\"reset\"} 0"), std::string::npos);
  EXPECT_NE(metrics.find("torus_agent_grant_denied{grant=\"kernel log\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace torus::agent
