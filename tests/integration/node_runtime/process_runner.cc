#include "tests/integration/node_runtime/process_runner.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

namespace torus::testing {
namespace {

TempDir makeDir() {
  auto dir = TempDir::create("torus-proc");
  if (!dir.ok()) std::abort();
  return std::move(*dir);
}

pid_t spawn(const std::vector<std::string>& args, const std::string& outPath,
            const std::string& errPath) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // A test killed by a signal (a timeout, ^C) runs no destructor: the child must not outlive it
  // and hold its ports and directories. The parent may already be gone before prctl takes effect.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  const int out = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int in = ::open("/dev/null", O_RDONLY);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  std::vector<char*> argv;
  for (const std::string& arg : args)
    argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

std::string readAll(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::optional<int> waitPid(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::string binaryPath(const std::string& name) {
  return std::string(TORUS_BIN_DIR) + "/" + name;
}

ProcessResult runProcess(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  TempDir dir = makeDir();
  const std::string outPath = (dir.path() / "out").string();
  const std::string errPath = (dir.path() / "err").string();
  const pid_t pid = spawn(args, outPath, errPath);
  ProcessResult result;
  if (auto code = waitPid(pid, timeout)) {
    result.exitCode = *code;
  } else {
    ::kill(pid, SIGKILL);
    waitPid(pid, std::chrono::seconds(5));
  }
  result.out = readAll(outPath);
  result.err = readAll(errPath);
  return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& args) : dir_(makeDir()) {
  pid_ = spawn(args, (dir_.path() / "out").string(), (dir_.path() / "err").string());
}

BackgroundProcess::~BackgroundProcess() {
  if (!exitCode_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitPid(pid_, std::chrono::seconds(5));
  }
}

std::string BackgroundProcess::stderrText() const {
  return readAll((dir_.path() / "err").string());
}

std::optional<std::string> BackgroundProcess::waitForStderr(const std::string& text,
                                                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string err = stderrText();
    if (err.find(text) != std::string::npos) return err;
    if (!exitCode_) exitCode_ = waitPid(pid_, std::chrono::milliseconds(0));
    if (exitCode_) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

void BackgroundProcess::signal(int signal) {
  if (!exitCode_) ::kill(pid_, signal);
}

std::optional<int> BackgroundProcess::waitExit(std::chrono::milliseconds timeout) {
  if (!exitCode_) exitCode_ = waitPid(pid_, timeout);
  return exitCode_;
}

namespace {

std::optional<std::string> httpExchange(int port, const std::string& request) {
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    return std::nullopt;
  }
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t count =
        ::send(socket.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (count <= 0) break;  // the server may answer and close before reading everything
    sent += static_cast<std::size_t>(count);
  }
  std::string response;
  char buffer[4096];
  while (true) {
    const ssize_t count = ::recv(socket.get(), buffer, sizeof(buffer), 0);
    if (count <= 0) break;
    response.append(buffer, static_cast<std::size_t>(count));
  }
  const std::size_t space = response.find(' ');
  const std::size_t bodyStart = response.find("\r\n\r\n");
  if (space == std::string::npos || bodyStart == std::string::npos) return std::nullopt;
  return response.substr(space + 1, 3) + " " + response.substr(bodyStart + 4);
}

}  // namespace

std::optional<std::string> httpGet(int port, const std::string& path) {
  return httpExchange(port,
                      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

std::optional<std::string> httpPost(int port, const std::string& path, const std::string& body) {
  return httpExchange(port, "POST " + path +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
}

std::optional<std::string> httpPostNoBody(int port, const std::string& path) {
  return httpExchange(port,
                      "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

int loggedPort(const std::string& log, const std::string& marker) {
  const std::size_t line = log.find(marker);
  if (line == std::string::npos) return -1;
  const std::size_t port = log.find(" port=", line);
  if (port == std::string::npos) return -1;
  return std::atoi(log.c_str() + port + 6);
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

}  // namespace torus::testing
