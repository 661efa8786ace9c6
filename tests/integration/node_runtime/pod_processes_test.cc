// Whether a deleted pod's processes still run, read from /proc as the agent reads it: by the
// cgroup kubelet names after the pod's UID, in both of kubelet's cgroup drivers' spellings.
#include "node-runtime/reset/pod_processes.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "common/base/temp_dir.h"

namespace torus::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUid = "4a1f5b0e-93d2-4c61-8f0a-2b7e1c9d3e55";

class PodProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("proc");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(std::move(*dir));
  }
  void process(int pid, const std::string& cgroup) {
    const fs::path path = dir_->path() / std::to_string(pid);
    fs::create_directories(path);
    ASSERT_TRUE(writeFile(path / "cgroup", cgroup).ok());
  }
  std::string root() const { return dir_->path().string(); }
  std::optional<TempDir> dir_;
};

TEST_F(PodProcesses, AProcessInThePodsCgroupfsCgroupIsFound) {
  process(1, "12:pids:/\n11:cpu,cpuacct:/\n");
  process(812, std::string("12:pids:/kubepods/besteffort/pod") + kUid +
                   "/3f2a9c\n11:cpu,cpuacct:/kubepods/besteffort/pod" + kUid + "/3f2a9c\n");
  fs::create_directories(dir_->path() / "self");  // not a pid: skipped
  auto found = reset::podHasProcesses(root(), kUid);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_TRUE(*found);
}

TEST_F(PodProcesses, SystemdsSliceNameWithUnderscoresIsFound) {
  std::string uid = kUid;
  std::ranges::replace(uid, '-', '_');
  process(77, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid +
                  ".slice/cri-containerd-9d1e.scope\n");
  auto found = reset::podHasProcesses(root(), kUid);
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(*found);
}

TEST_F(PodProcesses, OtherPodsAndTheHostAreNot) {
  process(1, "0::/init.scope\n");
  process(90, "0::/kubepods.slice/kubepods-pod0b1d2c3e_0000_4000_8000_000000000001.slice/x\n");
  // The same UID with more after it is another name, not this pod.
  process(91, std::string("12:pids:/kubepods/pod") + kUid + "0/c\n");
  auto found = reset::podHasProcesses(root(), kUid);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE(*found);
  EXPECT_FALSE(reset::cgroupLineIsPods("0::/kubepods/pod/x", ""));
}

TEST_F(PodProcesses, AProcRootThatCannotBeListedIsAnErrorNotNo) {
  auto found = reset::podHasProcesses((dir_->path() / "absent").string(), kUid);
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.error().message.find("cannot list"), std::string::npos);
}

}  // namespace
}  // namespace torus::testing
