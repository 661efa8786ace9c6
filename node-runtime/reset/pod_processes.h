// Whether a pod still has processes on this node, known by the cgroup kubelet puts every one of
// its containers (and its sandbox) in, named after the pod's UID: `pod<uid>` with the cgroupfs
// driver, `…-pod<uid with '_' for '-'>.slice` with systemd's. kubelet forgets a force-deleted pod
// at once and hands its device ids on while its containers run out their grace period; the pod's
// cgroup says when they are gone. Unlike a process's environment or its open files, an
// unprivileged container cannot change which cgroup it is in.
#pragma once

#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus::reset {

// One pass over `procRoot`/*/cgroup (a millisecond or so on a busy node); processes that exit
// meanwhile are skipped. An error only when `procRoot` itself cannot be listed: then nothing can
// be said either way. With the agent in its own PID namespace (hostPID off) this sees only the
// agent's processes; the grant probe reports that case.
Result<bool> podHasProcesses(const std::string& procRoot, std::string_view podUid);

// Whether one line of /proc/PID/cgroup places the process in the pod with this UID.
bool cgroupLineIsPods(std::string_view line, std::string_view podUid);

}  // namespace torus::reset
