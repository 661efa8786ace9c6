#include "common/base/text_table.h"

#include <gtest/gtest.h>

namespace torus {
namespace {

TEST(TextTable, AlignsColumnsAndSplitsTwoLineHeaders) {
  TextTable table({"NEURON\nDEVICE", "CORES"});
  table.addRow({"0", "4"});
  table.addRow({"15", "128"});
  EXPECT_EQ(table.render(),
            "+--------+-------+\n"
            "| NEURON | CORES |\n"
            "| DEVICE |       |\n"
            "+--------+-------+\n"
            "| 0      | 4     |\n"
            "| 15     | 128   |\n"
            "+--------+-------+\n");
}

}  // namespace
}  // namespace torus
