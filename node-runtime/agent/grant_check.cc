#include "node-runtime/agent/grant_check.h"

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/base/unique_fd.h"
#include "common/metrics/prometheus_text.h"

namespace torus::agent {
namespace {

Error denied(const std::string& what, int error) {
  return makeError(ErrorCode::kPermissionDenied, what + ": " + std::strerror(error));
}

// A process's security label (/proc/PID/attr/current) without AppArmor's " (enforce)" mode; ""
// when there is none to read (no security module, the process gone).
std::string labelOf(const std::filesystem::path& procPid, const GrantSyscalls& calls) {
  const std::filesystem::path file = procPid / "attr" / "current";
  UniqueFd fd(calls.open(file.c_str(), O_RDONLY | O_CLOEXEC, 0));
  if (!fd) return "";
  char text[256];
  const ssize_t length = ::read(fd.get(), text, sizeof text);
  if (length <= 0) return "";
  std::string label(text, static_cast<std::size_t>(length));
  while (!label.empty() && (label.back() == '\n' || label.back() == '\0'))
    label.pop_back();
  if (const auto mode = label.rfind(" ("); mode != std::string::npos) label.resize(mode);
  return label;
}

// Lists `procPid`/fd and reads its first link, as the holder scan does.
Result<void> readOpenFiles(const std::filesystem::path& procPid, const GrantSyscalls& calls) {
  const std::filesystem::path fds = procPid / "fd";
  UniqueFd dir(calls.open(fds.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
  if (!dir) return denied("listing " + fds.string(), errno);
  DIR* stream = ::fdopendir(dir.get());
  if (stream == nullptr) return denied("listing " + fds.string(), errno);
  (void)dir.release();  // closedir closes it
  std::string first;
  while (const dirent* entry = ::readdir(stream)) {
    if (entry->d_name[0] != '.') {
      first = entry->d_name;
      break;
    }
  }
  ::closedir(stream);
  if (first.empty()) return okResult();  // nothing open: listing it was the whole check
  char target[4096];
  const std::filesystem::path link = fds / first;
  if (calls.readlink(link.c_str(), target, sizeof target) < 0) {
    return denied("reading the link " + link.string(), errno);
  }
  return okResult();
}

// A process confined by a security profile other than the agent's, read as the holder scan reads
// workloads: AppArmor also asks the traced process's profile, and containerd's default profile
// lets only its peers read its processes, so a confined agent can read pid 1 (unconfined) and
// still no workload. No such process on the node: nothing more to learn.
Result<void> probeConfinedPeer(const std::filesystem::path& procRoot, const GrantSyscalls& calls) {
  const std::string own = labelOf(procRoot / "self", calls);
  std::error_code error;
  int looked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(procRoot, error)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid == "1") {
      continue;
    }
    if (++looked > 4096) break;  // a node's first few thousand processes are enough to find one
    const std::string label = labelOf(entry.path(), calls);
    if (label.empty() || label == "unconfined" || label == own) continue;
    if (auto read = readOpenFiles(entry.path(), calls); !read) {
      return makeError(ErrorCode::kPermissionDenied,
                       read.error().message + " (a process confined by " + label + "; the agent" +
                           (own.empty() || own == "unconfined" ? "" : ", under " + own) +
                           ", may not read it)");
    }
    return okResult();
  }
  return okResult();
}

}  // namespace

std::vector<DeniedGrant> checkGrants(const std::vector<Grant>& grants) {
  std::vector<DeniedGrant> found;
  for (const Grant& grant : grants) {
    if (auto probed = grant.probe(); !probed) {
      found.push_back({grant.name, probed.error().message, grant.fix});
    }
  }
  return found;
}

std::string describeDenied(const std::vector<DeniedGrant>& denied) {
  std::string text;
  for (const DeniedGrant& grant : denied) {
    if (!text.empty()) text += "; ";
    text += grant.name + ": " + grant.error + " (fix: " + grant.fix + ")";
  }
  return text;
}

std::string renderGrantMetrics(const std::vector<Grant>& grants,
                               const std::vector<DeniedGrant>& denied) {
  metrics::PrometheusText out;
  out.family("torus_agent_grant_denied", "gauge",
             "1 when a grant the agent needs was denied at start (reset, process scan, kernel "
             "log, kubelet directory); /readyz and the log name the fix.");
  for (const Grant& grant : grants) {
    bool isDenied = false;
    for (const DeniedGrant& d : denied)
      isDenied = isDenied || d.name == grant.name;
    out.sample("torus_agent_grant_denied", {{"grant", grant.name}}, isDenied ? 1 : 0);
  }
  return out.text();
}

GrantSyscalls systemGrantSyscalls() {
  return {
      [](const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); },
      [](const char* path, char* buffer, size_t size) { return ::readlink(path, buffer, size); },
      [](const char* path) { return ::unlink(path); },
  };
}

Result<void> probeWriteOpen(const std::filesystem::path& file, const GrantSyscalls& calls) {
  UniqueFd fd(calls.open(file.c_str(), O_WRONLY | O_CLOEXEC, 0));
  if (!fd) return denied("opening " + file.string() + " for writing", errno);
  return okResult();
}

Result<void> probeProcessScan(const std::filesystem::path& procRoot, const GrantSyscalls& calls) {
  if (auto first = readOpenFiles(procRoot / "1", calls); !first) return std::move(first).error();
  // Readable is not enough: with hostPID off, pid 1 is the first process of the agent's own
  // container, whose files say nothing of the node's, and every holder scan would find nobody
  // while other tenants hold the devices. The node's processes live in other mount namespaces
  // than the agent's container.
  const auto mountNamespaceOf = [&](const char* pid) -> Result<std::string> {
    const std::filesystem::path link = procRoot / pid / "ns" / "mnt";
    char target[256];
    const ssize_t length = calls.readlink(link.c_str(), target, sizeof target);
    if (length < 0) return denied("reading the link " + link.string(), errno);
    return std::string(target, static_cast<std::size_t>(length));
  };
  auto own = mountNamespaceOf("self");
  if (!own) return std::move(own).error();
  auto firsts = mountNamespaceOf("1");
  if (!firsts) return std::move(firsts).error();
  if (*own == *firsts) {
    return makeError(ErrorCode::kPermissionDenied,
                     "pid 1 shares the agent's mount namespace (" + *own +
                         "): the agent sees its own container's processes, not the node's "
                         "(hostPID off), so it cannot tell who holds a device");
  }
  return probeConfinedPeer(procRoot, calls);
}

Result<void> probeCreateIn(const std::filesystem::path& dir, const GrantSyscalls& calls) {
  const std::filesystem::path probe = dir / (".torus-probe-" + std::to_string(::getpid()));
  UniqueFd fd(calls.open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return denied("creating a file in " + dir.string(), errno);
  fd.reset();
  if (calls.unlink(probe.c_str()) != 0) return denied("removing " + probe.string(), errno);
  return okResult();
}

}  // namespace torus::agent
