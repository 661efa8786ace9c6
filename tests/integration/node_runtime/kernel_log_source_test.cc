// The kernel log as a container on a real node can read it: through syslog(2), when opening
// /dev/kmsg is refused by the runtime's device rules. A driver line written to the kernel's own
// log (root may write /dev/kmsg) reaches the watcher; lines already there do not.
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "node-runtime/health/kernel_log.h"

namespace torus::health {
namespace {

using namespace std::chrono_literals;

TEST(KernelLogSource, ADriverLineInTheKernelsLogIsReadThroughSyslog) {
  if (::geteuid() != 0) GTEST_SKIP() << "writing the kernel's log needs root";
  // A type no driver reports, unique to this run: other readers of this machine's log ignore it.
  const std::string type = "TORUS_TEST_" + std::to_string(::getpid());
  // The runtime's shape; a serial of no chip, so that no agent on this machine counts it.
  const std::string fields = " nd-id=7 serial-num=7e57000000000000";
  std::ofstream("/dev/kmsg") << "NEURON_HW_ERR=" << type << "_OLD" << fields << "\n";
  std::mutex mutex;
  std::condition_variable seen;
  std::vector<KernelHardwareError> errors;
  auto watcher = KernelLogWatcher::start(
      "/dev/kmsg",
      [&](const KernelHardwareError& error, const std::string&) {
        if (error.type.rfind(type, 0) != 0) return;
        std::lock_guard lock(mutex);
        errors.push_back(error);
        seen.notify_all();
      },
      KernelLogWatcher::Source::kSyslog);
  ASSERT_TRUE(watcher.ok()) << watcher.error().message;
  EXPECT_EQ((*watcher)->source(), "syslog(2)");
  {
    std::ofstream kmsg("/dev/kmsg");
    ASSERT_TRUE(kmsg) << "cannot write /dev/kmsg";
    kmsg << "NEURON_HW_ERR=" << type << fields << "\n";
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(seen.wait_for(lock, 10s, [&] { return !errors.empty(); }));
  EXPECT_EQ(errors.size(), 1U);
  EXPECT_EQ(errors[0].type, type);  // the line from before the start is not handed on
  EXPECT_EQ(errors[0].device, 7);
}

TEST(KernelLogSource, AFileThatCannotBeOpenedIsNamedWithTheReason) {
  auto missing = KernelLogWatcher::start(
      "/nonexistent/kmsg", [](const KernelHardwareError&, const std::string&) {},
      KernelLogWatcher::Source::kEither);
  ASSERT_FALSE(missing.ok());
  // Not a refusal: no fallback, and the message says what was missing.
  EXPECT_NE(missing.error().message.find("/nonexistent/kmsg: No such file"), std::string::npos)
      << missing.error().message;
}

}  // namespace
}  // namespace torus::health
