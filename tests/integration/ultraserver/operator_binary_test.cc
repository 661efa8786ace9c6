// neuron-ultraserver-operator as a process: --help, its settings reference equal to
// docs/config.md, and bad settings refused before anything starts, with the reason.
#include <gtest/gtest.h>

#include "common/base/file_io.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

TEST(UltraServerOperatorBinary, HelpNamesTheApiAndTheFlags) {
  const ProcessResult help = runProcess({binaryPath("neuron-ultraserver-operator"), "--help"});
  EXPECT_EQ(help.exitCode, 0);
  const std::string text = help.out + help.err;
  EXPECT_NE(text.find("NeuronUltraServerWorkload"), std::string::npos) << text;
  EXPECT_NE(text.find("--leader-elect"), std::string::npos) << text;
  EXPECT_NE(text.find("--health-probe-bind-address"), std::string::npos) << text;
}

TEST(UltraServerOperatorBinary, ConfigReferenceMatchesDocs) {
  const ProcessResult reference =
      runProcess({binaryPath("neuron-ultraserver-operator"), "--print-config-reference"});
  ASSERT_EQ(reference.exitCode, 0);
  auto docs = readSmallFile(std::string(TORUS_SOURCE_DIR) + "/docs/config.md", 1 << 20);
  ASSERT_TRUE(docs.ok()) << docs.error().message;
  EXPECT_NE(docs->find(reference.out), std::string::npos)
      << "docs/config.md is out of date; regenerate the table with "
         "build/bin/neuron-ultraserver-operator --print-config-reference";
}

TEST(UltraServerOperatorBinary, BadSettingsAreRefusedWithTheReason) {
  const ProcessResult noNamespace =
      runProcess({"/usr/bin/env", "-u", "POD_NAMESPACE", binaryPath("neuron-ultraserver-operator"),
                  "--kubeconfig=/nonexistent"});
  EXPECT_EQ(noNamespace.exitCode, 2);
  EXPECT_NE(noNamespace.err.find("--namespace (or POD_NAMESPACE) is needed"), std::string::npos)
      << noNamespace.err;

  const ProcessResult badAddress =
      runProcess({binaryPath("neuron-ultraserver-operator"), "--namespace=kube-system",
                  "--health-probe-bind-address=nowhere"});
  EXPECT_EQ(badAddress.exitCode, 2);
  EXPECT_NE(badAddress.err.find("--health-probe-bind-address"), std::string::npos)
      << badAddress.err;

  const ProcessResult noApi =
      runProcess({binaryPath("neuron-ultraserver-operator"), "--namespace=kube-system",
                  "--kubeconfig=/nonexistent/kubeconfig"});
  EXPECT_NE(noApi.exitCode, 0);
  EXPECT_NE(noApi.err.find("reaching the Kubernetes API"), std::string::npos) << noApi.err;
}

}  // namespace
}  // namespace torus::testing
