#include "kubectl-neuron/dra_claims.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::kubectl_neuron {
namespace {

using nlohmann::json;

json claim(const std::string& ns, const std::string& name, const std::vector<std::string>& devices,
           const std::string& driver = "neuron.aws.com") {
  json results = json::array();
  for (const std::string& device : devices) {
    results.push_back({{"driver", driver}, {"pool", "node-a"}, {"device", device}});
  }
  return {{"metadata", {{"namespace", ns}, {"name", name}}},
          {"status",
           {{"allocation", {{"devices", {{"results", results}}}}},
            {"reservedFor", json::array({{{"resource", "pods"}, {"name", name + "-pod"}}})}}}};
}

const json kSlices = {
    {"items",
     json::array(
         {{{"spec",
            {{"driver", "neuron.aws.com"},
             {"nodeName", "node-a"},
             {"devices", json::array({{{"name", "neurondevice9"},
                                       {"taints", json::array({{{"key", "neuron.aws.com/unhealthy"},
                                                                {"value", "UncorrectedECC"},
                                                                {"effect", "NoSchedule"}}})}},
                                      {{"name", "neurondevice8"}}})}}}}})}};

TEST(KubectlNeuronClaims, TableCompactsDeviceRunsAndListsTaints) {
  const json claims = {
      {"items",
       json::array({claim("ml", "train",
                          {"neurondevice4", "neurondevice5", "neurondevice6", "neurondevice7"}),
                    claim("ml", "infer", {"neuroncore8", "neuroncore9", "neuroncore12"}),
                    claim("ml", "gpu", {"gpu0"}, "gpu.nvidia.com"),
                    {{"metadata", {{"namespace", "ml"}, {"name", "pending"}}}}})}};
  const std::string out = renderClaims(claims, kSlices, "", false);
  EXPECT_NE(out.find("neurondevice4-7"), std::string::npos) << out;
  EXPECT_NE(out.find("neuroncore8-9,12"), std::string::npos) << out;
  EXPECT_NE(out.find("train-pod"), std::string::npos) << out;
  EXPECT_EQ(out.find("gpu"), std::string::npos) << out;      // another driver's claim
  EXPECT_EQ(out.find("pending"), std::string::npos) << out;  // not allocated
  EXPECT_NE(out.find("neuron.aws.com/unhealthy=UncorrectedECC:NoSchedule"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("neurondevice8"), std::string::npos) << out;  // untainted
}

TEST(KubectlNeuronClaims, JsonAndNamespaceFilter) {
  const json claims = {{"items", json::array({claim("ml", "train", {"neurondevice0"}),
                                              claim("other", "x", {"neurondevice1"})})}};
  const json out = json::parse(renderClaims(claims, kSlices, "ml", true));
  ASSERT_EQ(out["claims"].size(), 1u);
  EXPECT_EQ(out["claims"][0]["devices"], json::array({"neurondevice0"}));
  EXPECT_EQ(out["claims"][0]["node"], "node-a");
  EXPECT_EQ(out["taintedDevices"][0]["device"], "neurondevice9");
  EXPECT_NE(renderClaims(json::object(), json(nullptr), "ml", false).find("No ResourceClaims"),
            std::string::npos);
}

}  // namespace
}  // namespace torus::kubectl_neuron
