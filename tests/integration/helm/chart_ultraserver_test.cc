// The chart's guard of the UltraServer reservation: the workload annotation on ResourceClaims and
// ResourceClaimTemplates may be set only by the writers the reservation trusts.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/integration/helm/chart_render.h"

namespace torus::testing {
namespace {

TEST(HelmChart, OnlyTheOperatorAndTheClaimControllerMaySetTheWorkloadAnnotation) {
  const auto guardsOf = [](const std::vector<YAML::Node>& rendered) {
    std::vector<YAML::Node> guards;
    for (const YAML::Node& policy : objectsOfKind(rendered, "ValidatingAdmissionPolicy")) {
      if (policy["metadata"]["name"].as<std::string>().find("workload-annotation") !=
          std::string::npos) {
        guards.push_back(policy);
      }
    }
    return guards;
  };
  EXPECT_TRUE(guardsOf(render({"DRA alone", {"dra.enabled=true"}})).empty());
  const auto objects =
      render({"the operator", {"dra.enabled=true", "ultraserverOperator.enabled=true"}});
  const std::vector<YAML::Node> guards = guardsOf(objects);
  ASSERT_EQ(guards.size(), 2U);
  for (const YAML::Node& policy : guards) {
    const YAML::Node rule = policy["spec"]["matchConstraints"]["resourceRules"][0];
    const std::string resource = rule["resources"][0].as<std::string>();
    SCOPED_TRACE(resource);
    EXPECT_EQ(rule["apiGroups"][0].as<std::string>(), "resource.k8s.io");
    EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
    const std::string allowed = policy["spec"]["validations"][0]["expression"].as<std::string>();
    const std::string value = policy["spec"]["variables"][0]["expression"].as<std::string>();
    if (resource == "resourceclaimtemplates") {
      // The annotation a template hands on sits in the claim metadata it carries.
      EXPECT_NE(value.find("object.spec.metadata.annotations"), std::string::npos) << value;
      EXPECT_NE(allowed.find("system:serviceaccount:kube-system:torus-torus-ultraserver-operator"),
                std::string::npos)
          << allowed;
      EXPECT_EQ(allowed.find("resource-claim-controller"), std::string::npos) << allowed;
    } else {
      EXPECT_EQ(resource, "resourceclaims");
      EXPECT_NE(value.find("object.metadata.annotations"), std::string::npos) << value;
      EXPECT_NE(allowed.find("system:serviceaccount:kube-system:resource-claim-controller"),
                std::string::npos)
          << allowed;
      EXPECT_EQ(allowed.find("ultraserver-operator"), std::string::npos) << allowed;
    }
  }
  int bindings = 0;
  for (const YAML::Node& binding : objectsOfKind(objects, "ValidatingAdmissionPolicyBinding")) {
    if (binding["spec"]["policyName"].as<std::string>().find("workload-annotation") !=
        std::string::npos) {
      EXPECT_EQ(binding["spec"]["validationActions"][0].as<std::string>(), "Deny");
      ++bindings;
    }
  }
  EXPECT_EQ(bindings, 2);
}

}  // namespace
}  // namespace torus::testing
