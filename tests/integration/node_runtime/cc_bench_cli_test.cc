// neuron-cc-bench's command line: settings that cannot describe a run are refused with the
// reason, before any rank starts.
#include <gtest/gtest.h>

#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

TEST(CcBenchCli, PretendHostsMustSplitTheRanksEvenly) {
  // Regression: --hosts 3 --ranks 2 ran two hosts and said nothing.
  for (const auto& [hosts, ranks] : {std::pair{"3", "2"}, std::pair{"3", "4"}}) {
    const ProcessResult result =
        runProcess({binaryPath("neuron-cc-bench"), "--hosts", hosts, "--ranks", ranks});
    EXPECT_EQ(result.exitCode, 2) << result.out << result.err;
    EXPECT_NE(result.err.find(std::string("--hosts ") + hosts + " does not split --ranks " + ranks +
                              " into hosts of equal size"),
              std::string::npos)
        << result.err;
  }
}

}  // namespace
}  // namespace torus::testing
