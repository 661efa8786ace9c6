#include "common/base/subprocess.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

extern char** environ;

namespace torus {
namespace {

std::string errnoText(int error) {
  return std::strerror(error);
}

// Owns a started child: waits for it once, and on an early return kills and reaps it so that no
// zombie or orphaned plugin outlives the call.
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }

  Result<int> wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR) return makeError(ErrorCode::kInternal, "waitpid: " + errnoText(errno));
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

Result<Pipe> makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return makeError(ErrorCode::kInternal, "cannot make a pipe: " + errnoText(errno));
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Reads every open pipe until each reaches end of file, keeping up to `limit` bytes of each.
Result<void> drain(std::span<UniqueFd* const> fds, std::span<std::string* const> sinks,
                   std::size_t limit) {
  std::array<char, 16384> buffer{};
  while (true) {
    std::vector<pollfd> polled;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i]->valid()) {
        polled.push_back({fds[i]->get(), POLLIN, 0});
        which.push_back(i);
      }
    }
    if (polled.empty()) return okResult();
    if (::poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return makeError(ErrorCode::kInternal, "poll: " + errnoText(errno));
    }
    for (std::size_t k = 0; k < polled.size(); ++k) {
      if (polled[k].revents == 0) continue;
      const ssize_t got = ::read(polled[k].fd, buffer.data(), buffer.size());
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[which[k]]->reset();
        continue;
      }
      std::string& sink = *sinks[which[k]];
      const std::size_t room = limit > sink.size() ? limit - sink.size() : 0;
      sink.append(buffer.data(), std::min(room, static_cast<std::size_t>(got)));
    }
  }
}

}  // namespace

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    out.emplace_back(*entry);
  }
  return out;
}

Result<ProcessOutcome> runProcess(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv.front().empty()) {
    return makeError(ErrorCode::kInvalidArgument, "no program to run");
  }
  auto out = makePipe();
  if (!out) return std::move(out).error();
  Result<Pipe> err = Pipe{};
  if (!spec.inheritStderr) {
    err = makePipe();
    if (!err) return std::move(err).error();
  }

  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (!spec.inheritStdin) {
    ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  ::posix_spawn_file_actions_adddup2(&actions, out->write.get(), STDOUT_FILENO);
  if (!spec.inheritStderr) ::posix_spawn_file_actions_adddup2(&actions, err->write.get(), 2);

  std::vector<char*> argv;
  for (const std::string& arg : spec.argv)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : spec.env)
    envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  pid_t pid = -1;
  // posix_spawnp searches $PATH of this process, as kubectl does (Go's exec.LookPath).
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    const ErrorCode code =
        spawned == ENOENT || spawned == EACCES || spawned == ENOEXEC || spawned == ENOTDIR
            ? ErrorCode::kNotFound
            : ErrorCode::kInternal;
    return makeError(code, spec.argv.front() + ": " + errnoText(spawned));
  }
  ChildProcess child(pid);
  // Our copies of the write ends must close, or the reads below never see end of file.
  out->write.reset();
  if (!spec.inheritStderr) err->write.reset();

  ProcessOutcome outcome;
  const std::array<UniqueFd*, 2> fds = {&out->read, &err->read};
  const std::array<std::string*, 2> sinks = {&outcome.out, &outcome.err};
  if (auto read = drain(fds, sinks, spec.maxOutputBytes); !read) return std::move(read).error();
  auto status = child.wait();
  if (!status) return std::move(status).error();
  if (WIFEXITED(*status)) {
    outcome.exitCode = WEXITSTATUS(*status);
  } else {
    outcome.exitCode = -1;
    outcome.termSignal = WIFSIGNALED(*status) ? WTERMSIG(*status) : 0;
  }
  return outcome;
}

}  // namespace torus
