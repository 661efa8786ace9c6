// The grants the agent depends on, probed once before it serves: writing a device's reset file,
// reading other processes' open files, following the kernel log, creating its sockets in
// kubelet's directories. On a real node any of them can be denied by something the bed does not
// have (a security module, the runtime's device rules, a securityContext that dropped a
// capability); a denial found here is named at start, with the chart value that gives the grant,
// in the log, /readyz, /metrics and a Node Event, instead of surfacing as the first container
// that cannot start.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/base/result.h"

namespace torus::agent {

struct Grant {
  std::string name;  // "reset", "process scan", "kernel log", "kubelet directory"
  std::string fix;   // what gives it: the chart value, the host setting
  std::function<Result<void>()> probe;
};

struct DeniedGrant {
  std::string name;
  std::string error;
  std::string fix;
};

// Runs every probe; the denied grants in the order given.
std::vector<DeniedGrant> checkGrants(const std::vector<Grant>& grants);
// "reset: <error> (fix: <fix>); kernel log: …" for /readyz and the Event.
std::string describeDenied(const std::vector<DeniedGrant>& denied);
// torus_agent_grant_denied{grant=…} 0 or 1 for each grant probed.
std::string renderGrantMetrics(const std::vector<Grant>& grants,
                               const std::vector<DeniedGrant>& denied);

// The system calls the probes make, replaceable so a test can answer with the errno a security
// module would (this kernel has none). Each returns -1 and sets errno on failure, as libc does.
struct GrantSyscalls {
  std::function<int(const char* path, int flags, mode_t mode)> open;
  std::function<ssize_t(const char* path, char* buffer, size_t size)> readlink;
  std::function<int(const char* path)> unlink;
};
GrantSyscalls systemGrantSyscalls();

// Opens `file` for writing and closes it without writing (a reset file: opening resets nothing).
Result<void> probeWriteOpen(const std::filesystem::path& file, const GrantSyscalls& calls);
// Lists `procRoot`/1/fd and reads its first link: what the holder scan does for every process
// (pid 1 is the node's init with hostPID, a process outside the agent's container). Denied too
// when pid 1 shares the agent's mount namespace: then the agent sees only its own container's
// processes (hostPID off) and a scan would find no holder on the node. And where a security
// module labels processes, one confined by another profile than the agent's (a workload under
// containerd's default AppArmor profile) must be readable too: pid 1, unconfined, says nothing of
// whether the profiles let the agent read the workloads.
Result<void> probeProcessScan(const std::filesystem::path& procRoot, const GrantSyscalls& calls);
// Creates and removes a file in `dir`, as serving a socket there does.
Result<void> probeCreateIn(const std::filesystem::path& dir, const GrantSyscalls& calls);

}  // namespace torus::agent
