#include "tests/integration/collectives/rank_launcher.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/unique_fd.h"
#include "node-runtime/collectives/bootstrap/bootstrap.h"

namespace torus::coll::testing {
namespace {}  // namespace

std::vector<RankOutcome> launchRanks(const LaunchOptions& options, const RankBody& body) {
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(options.size));
  auto listener = listenOn("127.0.0.1:0");
  if (!listener) {
    outcomes[0].message = "launcher: " + listener.error().message;
    return outcomes;
  }
  const int port = boundPort(*listener).valueOr(0);
  const std::string root = "127.0.0.1:" + std::to_string(port);
  std::vector<pid_t> pids(static_cast<std::size_t>(options.size), -1);
  std::vector<UniqueFd> pipes(static_cast<std::size_t>(options.size));
  for (int r = 0; r < options.size; ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      outcomes[static_cast<std::size_t>(r)].message = "launcher: pipe failed";
      continue;
    }
    UniqueFd readEnd(fds[0]);
    UniqueFd writeEnd(fds[1]);
    const pid_t pid = ::fork();
    if (pid == 0) {
      readEnd.reset();
      for (auto& other : pipes)
        other.reset();
      // Ranks that use libfabric stay on loopback, like everything the tests start.
      ::setenv("FI_TCP_IFACE", "lo", 1);
      CommOptions comm;
      comm.rank = r;
      comm.size = options.size;
      comm.rootAddress = root;
      comm.timeout = options.commTimeout;
      comm.name = "test-comm";
      comm.jobSecret = options.jobSecret;
      if (r == 0) {
        comm.rootListener = std::move(*listener);
      } else {
        listener->reset();
      }
      const std::string message = body(std::move(comm));
      writeFully(writeEnd.get(), message);
      writeEnd.reset();
      ::_exit(message.empty() ? 0 : 1);
    }
    pids[static_cast<std::size_t>(r)] = pid;
    pipes[static_cast<std::size_t>(r)] = std::move(readEnd);
  }
  listener->reset();
  std::jthread intruder;
  if (options.intruder) intruder = std::jthread([&options, port] { options.intruder(port); });

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options.deadline;
  bool killed = false;
  std::vector<bool> open(pipes.size());
  for (std::size_t i = 0; i < pipes.size(); ++i)
    open[i] = pipes[i].valid();
  while (std::any_of(open.begin(), open.end(), [](bool o) { return o; })) {
    const auto now = std::chrono::steady_clock::now();
    if (options.killRank && !killed && now >= start + options.killAfter) {
      ::kill(pids[static_cast<std::size_t>(*options.killRank)], SIGKILL);
      killed = true;
    }
    if (now >= deadline) break;
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < pipes.size(); ++i) {
      if (!open[i]) continue;
      fds.push_back(pollfd{pipes[i].get(), POLLIN, 0});
      which.push_back(i);
    }
    ::poll(fds.data(), fds.size(), 10);
    for (std::size_t k = 0; k < fds.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(fds[k].fd, chunk, sizeof(chunk));
      if (n > 0) {
        outcomes[which[k]].message.append(chunk, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        open[which[k]] = false;
      }
    }
  }
  for (int r = 0; r < options.size; ++r) {
    auto& outcome = outcomes[static_cast<std::size_t>(r)];
    outcome.rank = r;
    const pid_t pid = pids[static_cast<std::size_t>(r)];
    outcome.pid = pid;
    if (pid <= 0) continue;
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == 0) {
      // Give a rank that closed its pipe a moment to exit, then kill it as hung.
      for (int i = 0; i < 200 && done == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        done = ::waitpid(pid, &status, WNOHANG);
      }
      if (done == 0) {
        outcome.hung = true;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
      }
    }
    if (WIFEXITED(status)) {
      outcome.exited = true;
      outcome.exitCode = WEXITSTATUS(status);
    }
  }
  return outcomes;
}

std::string summarizeFailures(const std::vector<RankOutcome>& outcomes) {
  std::string out;
  for (const auto& o : outcomes) {
    if (o.exited && o.exitCode == 0 && o.message.empty() && !o.hung) continue;
    out += "rank " + std::to_string(o.rank) + (o.hung ? " hung" : "") +
           (o.exited ? " exit=" + std::to_string(o.exitCode) : " killed") + ": " + o.message + "\n";
  }
  return out;
}

std::vector<std::string> torusShmNamesOf(int rootPid) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "torus-%08x", static_cast<unsigned>(rootPid));
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    // Ours only: "torus-<16 hex digits of the session>-..." (other tests keep temp dirs here).
    const bool ours = name.size() > 23 && name.rfind(prefix, 0) == 0 && name[22] == '-' &&
                      std::all_of(name.begin() + 6, name.begin() + 22, [](char c) {
                        return std::isxdigit(static_cast<unsigned char>(c));
                      });
    if (ours) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace torus::coll::testing
