// The opaque configs: what the UltraServer operator writes into a ResourceClaimTemplate is what
// the DRA driver reads at prepare, and the driver refuses what AWS's would not accept.
#include "common/contracts/opaque_config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::contracts {
namespace {

using nlohmann::json;

NeuronSettings readBack(const std::vector<json>& parameters) {
  NeuronSettings settings;
  for (const json& each : parameters) {
    auto applied = applyOpaqueParameters(each, settings);
    EXPECT_TRUE(applied.ok()) << applied.error().message;
  }
  return settings;
}

TEST(OpaqueConfig, WhatIsWrittenReadsBackTheSame) {
  NeuronSettings lncOnly;
  lncOnly.logicalNeuronCore = 1;
  NeuronSettings modeOnly;
  modeOnly.ultraServerMode = 4;
  NeuronSettings both;
  both.logicalNeuronCore = 2;
  both.ultraServerMode = 2;
  const std::vector<NeuronSettings> cases = {NeuronSettings(), lncOnly, modeOnly, both};
  for (const NeuronSettings& written : cases) {
    EXPECT_EQ(readBack(opaqueParameters(written)), written);
  }
}

TEST(OpaqueConfig, TheWriterSpellsAwsKindsAndVersion) {
  const auto parameters = opaqueParameters({.logicalNeuronCore = 2, .ultraServerMode = 4});
  ASSERT_EQ(parameters.size(), 2u);
  EXPECT_EQ(parameters[0], (json{{"apiVersion", "neuron.aws.com/v1"},
                                 {"kind", "UltraServerConfig"},
                                 {"ultraserverMode", 4}}));
  EXPECT_EQ(parameters[1], (json{{"apiVersion", "neuron.aws.com/v1"},
                                 {"kind", "NeuronConfig"},
                                 {"logicalNeuronCore", 2}}));
}

TEST(OpaqueConfig, TheReaderNamesWhatItRefuses) {
  const struct {
    const char* description;
    json parameters;
    const char* message;
  } cases[] = {
      {"another version",
       {{"apiVersion", "neuron.aws.com/v1beta1"}, {"kind", "NeuronConfig"}},
       "apiVersion must be \"neuron.aws.com/v1\""},
      {"an unknown kind",
       {{"apiVersion", "neuron.aws.com/v1"}, {"kind", "GpuConfig"}},
       "is not NeuronConfig or UltraServerConfig"},
      {"an unknown field",
       {{"apiVersion", "neuron.aws.com/v1"}, {"kind", "NeuronConfig"}, {"lnc", 2}},
       "NeuronConfig has no field \"lnc\""},
      {"a mode out of range",
       {{"apiVersion", "neuron.aws.com/v1"}, {"kind", "UltraServerConfig"}, {"ultraserverMode", 3}},
       "UltraServerConfig.ultraserverMode is 3"},
      {"not an object", json::array(), "must be an object"},
  };
  for (const auto& each : cases) {
    NeuronSettings settings;
    auto applied = applyOpaqueParameters(each.parameters, settings);
    ASSERT_FALSE(applied.ok()) << each.description;
    EXPECT_NE(applied.error().message.find(each.message), std::string::npos)
        << each.description << ": " << applied.error().message;
    EXPECT_EQ(settings, NeuronSettings{}) << each.description;
  }
}

}  // namespace
}  // namespace torus::contracts
