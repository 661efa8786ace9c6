// The test helper that runs our binaries: a process it started must not outlive the test that
// started it, even when that test is killed by a signal and runs no destructor (a ctest timeout,
// ^C), or it would keep the ports and directories the next test picks.
#include "tests/integration/node_runtime/process_runner.h"

#include <fstream>
#include <string>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

namespace torus::testing {
namespace {

using namespace std::chrono_literals;

// Gone, or a zombie not reaped yet (an orphan's reaper may be slow): either way, not running.
bool stopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto close = line.rfind(')');
  return close == std::string::npos || line.substr(close + 2, 1) == "Z";
}

TEST(BackgroundProcessTest, DiesWithTheTestThatStartedItWhenThatTestIsKilled) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd readEnd(fds[0]);
  UniqueFd writeEnd(fds[1]);
  const pid_t test = ::fork();
  ASSERT_GE(test, 0);
  if (test == 0) {
    // The "test": starts a long-running process, reports its pid, and waits to be killed.
    BackgroundProcess sleeper({"/bin/sleep", "120"});
    const pid_t pid = sleeper.pid();
    if (::write(writeEnd.get(), &pid, sizeof pid) != sizeof pid) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  writeEnd.reset();
  pid_t sleeper = -1;
  ASSERT_EQ(::read(readEnd.get(), &sleeper, sizeof sleeper), static_cast<ssize_t>(sizeof sleeper));
  ASSERT_GT(sleeper, 0);
  ASSERT_TRUE(eventually([&] { return !stopped(sleeper); }, 5s)) << "the sleeper never ran";

  ::kill(test, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(test, &status, 0), test);
  EXPECT_TRUE(eventually([&] { return stopped(sleeper); }, 10s))
      << "pid " << sleeper << " kept running after the test that started it was killed";
  if (!stopped(sleeper)) ::kill(sleeper, SIGKILL);
}

}  // namespace
}  // namespace torus::testing
