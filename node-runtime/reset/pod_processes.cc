#include "node-runtime/reset/pod_processes.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/base/file_io.h"
#include "common/base/strings.h"

namespace torus::reset {

bool cgroupLineIsPods(std::string_view line, std::string_view podUid) {
  if (podUid.empty()) return false;
  std::string underscored(podUid);
  std::ranges::replace(underscored, '-', '_');
  // "12:pids:/kubepods/besteffort/pod<uid>/<container>" (cgroupfs) or
  // "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice/…" (systemd).
  // A UID is 36 characters of its own, so "pod" before it and a separator after it suffice.
  for (const std::string& uid : {std::string(podUid), underscored}) {
    const std::string needle = "pod" + uid;
    for (auto at = line.find(needle); at != std::string_view::npos;
         at = line.find(needle, at + 1)) {
      const auto end = at + needle.size();
      if (end == line.size() || line[end] == '/' || line[end] == '.') return true;
    }
  }
  return false;
}

Result<bool> podHasProcesses(const std::string& procRoot, std::string_view podUid) {
  std::error_code ec;
  std::filesystem::directory_iterator entries(procRoot, ec);
  if (ec) {
    return makeError(ErrorCode::kUnavailable,
                     "cannot list " + procRoot + " to find the pod's processes: " + ec.message());
  }
  for (const auto& entry : entries) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::ranges::all_of(pid, [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    auto cgroups = readSmallFile(entry.path() / "cgroup", 16 * 1024);
    if (!cgroups) continue;  // exited since the listing
    for (const std::string_view line : splitAndTrim(*cgroups, '\n')) {
      if (cgroupLineIsPods(line, podUid)) return true;
    }
  }
  return false;
}

}  // namespace torus::reset
