#include "node-runtime/health/deep_check/check_command.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

namespace torus::health {
namespace {

using Clock = std::chrono::steady_clock;

// The child, reaped once: by a wait that saw it exit, or killed (with its group) and waited for.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  // The exit status once it has exited, or -1 while it runs.
  int poll() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, WNOHANG) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Kills it and its group (a shell's children too); the destructor reaps it.
  void kill() {
    if (pid_ > 0) ::kill(-pid_, SIGKILL);
  }

 private:
  pid_t pid_;
};

}  // namespace

CommandOutcome runCheckCommand(const std::string& command,
                               const std::map<std::string, std::string>& environment,
                               std::chrono::milliseconds deadline) {
  CommandOutcome outcome;
  const auto started = Clock::now();
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
    outcome.problem =
        "--deep-check-command: cannot make a pipe: " + std::string(std::strerror(errno));
    return outcome;
  }
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  // Built before the fork: the child only calls async-signal-safe functions.
  std::vector<std::string> envText;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (!environment.contains(text.substr(0, text.find('=')))) envText.push_back(text);
  }
  for (const auto& [name, value] : environment)
    envText.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& text : envText)
    envp.push_back(text.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};

  const pid_t pid = ::fork();
  if (pid < 0) {
    outcome.problem = "--deep-check-command: cannot fork: " + std::string(std::strerror(errno));
    return outcome;
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a deadline kills whatever it started
    ::dup2(writeEnd.get(), STDOUT_FILENO);
    ::dup2(writeEnd.get(), STDERR_FILENO);
    const int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull >= 0) ::dup2(devNull, STDIN_FILENO);
    ::execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first
  Child child(pid);
  writeEnd.reset();
  const auto until = started + deadline;
  bool open = true;
  int status = -1;
  auto drainUntil = until;
  while (true) {
    if (open) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      pollfd ready{readEnd.get(), POLLIN, 0};
      if (::poll(&ready, 1,
                 static_cast<int>(std::max<long>(0, std::min<long>(left.count(), 100)))) > 0) {
        char buffer[4096];
        const ssize_t n = ::read(readEnd.get(), buffer, sizeof(buffer));
        if (n > 0) {
          outcome.output.append(buffer, static_cast<std::size_t>(n));
          if (outcome.output.size() > kCommandOutputLimit) {
            outcome.output.erase(0, outcome.output.size() - kCommandOutputLimit);
          }
        } else if (n == 0 || errno != EINTR) {
          open = false;
        }
      }
    } else {
      ::usleep(10'000);
    }
    if (status < 0) {
      status = child.poll();
      // Exited: what it wrote last may still be in the pipe, or a process it left behind holds
      // the pipe open; read for a moment more, not for the rest of the deadline.
      if (status >= 0) drainUntil = std::min(until, Clock::now() + std::chrono::seconds(1));
    }
    if (status >= 0) {
      if (!open || Clock::now() >= drainUntil) break;
      continue;
    }
    if (Clock::now() >= until) {
      child.kill();
      outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
      outcome.problem = "--deep-check-command did not finish within " +
                        std::to_string(deadline.count()) + " ms (killed): " + command;
      return outcome;
    }
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  outcome.exitCode = status;
  outcome.passed = status == 0;
  if (!outcome.passed) {
    std::string lastLine = outcome.output;
    while (!lastLine.empty() && (lastLine.back() == '\n' || lastLine.back() == ' '))
      lastLine.pop_back();
    lastLine =
        lastLine.substr(lastLine.rfind('\n') == std::string::npos ? 0 : lastLine.rfind('\n') + 1);
    outcome.problem = "--deep-check-command exited " + std::to_string(status) +
                      (status == 127 ? " (not found?)" : "") + ": " + command +
                      (lastLine.empty() ? "" : ": " + lastLine);
  }
  return outcome;
}

}  // namespace torus::health
