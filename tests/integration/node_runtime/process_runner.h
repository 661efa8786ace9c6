// Test helper: runs our binaries as real processes (output captured to files, every wait
// bounded) and speaks just enough HTTP/1.1 over loopback to probe /healthz.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/base/temp_dir.h"

namespace torus::testing {

// build/bin/<name> (TORUS_BIN_DIR is compiled in by tests/CMakeLists.txt).
std::string binaryPath(const std::string& name);

struct ProcessResult {
  int exitCode = -1;  // -1 when it had to be killed
  std::string out;
  std::string err;
};

ProcessResult runProcess(const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));

class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& args);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Waits until stderr contains `text`; returns stderr so far, or nullopt on timeout/exit.
  std::optional<std::string> waitForStderr(const std::string& text,
                                           std::chrono::milliseconds timeout);
  std::string stderrText() const;
  void signal(int signal);
  std::optional<int> waitExit(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  std::optional<int> exitCode_;
};

// GET http://127.0.0.1:<port><path>; returns "<status> <body>" or nullopt when it cannot connect.
std::optional<std::string> httpGet(int port, const std::string& path);
// POST with a JSON body; the same answer shape. A server may stop reading a body it refuses.
std::optional<std::string> httpPost(int port, const std::string& path, const std::string& body);
// POST with no body and no Content-Length, as `curl -X POST URL` sends it.
std::optional<std::string> httpPostNoBody(int port, const std::string& path);

// Polls `condition` until it holds or `limit` passes; returns the last answer.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds limit = std::chrono::seconds(10));

// The port a server logged ("... port=NNN") after `marker`; -1 when not there.
int loggedPort(const std::string& log, const std::string& marker);

}  // namespace torus::testing
