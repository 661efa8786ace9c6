// The chart's guards of the UltraServer reservation: the workload annotation on ResourceClaims and
// ResourceClaimTemplates, and a toleration of the reserved taint in them, may be written only by
// the writers the reservation trusts. (What the expressions admit is checked against a real API
// server by the UltraServer e2e.)
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/integration/helm/chart_render.h"

namespace torus::testing {
namespace {

// policiesNamed: the rendered ValidatingAdmissionPolicies (or their bindings) whose name has
// `part`.
std::vector<YAML::Node> policiesNamed(const std::vector<YAML::Node>& rendered,
                                      const std::string& kind, const std::string& part) {
  std::vector<YAML::Node> found;
  for (const YAML::Node& object : objectsOfKind(rendered, kind)) {
    if (object["metadata"]["name"].as<std::string>().find(part) != std::string::npos) {
      found.push_back(object);
    }
  }
  return found;
}

TEST(HelmChart, OnlyTheOperatorAndTheClaimControllerMaySetTheWorkloadAnnotation) {
  const auto guardsOf = [](const std::vector<YAML::Node>& rendered) {
    return policiesNamed(rendered, "ValidatingAdmissionPolicy", "workload-annotation");
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
  const std::vector<YAML::Node> bindings =
      policiesNamed(objects, "ValidatingAdmissionPolicyBinding", "workload-annotation");
  ASSERT_EQ(bindings.size(), 2U);
  for (const YAML::Node& binding : bindings) {
    EXPECT_EQ(binding["spec"]["validationActions"][0].as<std::string>(), "Deny");
  }
}

TEST(HelmChart, OnlyTheOperatorAndTheClaimControllerMayTolerateTheReservedTaint) {
  const std::string part = "reserved-toleration";
  EXPECT_TRUE(
      policiesNamed(render({"DRA alone", {"dra.enabled=true"}}), "ValidatingAdmissionPolicy", part)
          .empty());
  const auto objects =
      render({"the operator", {"dra.enabled=true", "ultraserverOperator.enabled=true"}});
  const std::vector<YAML::Node> policies =
      policiesNamed(objects, "ValidatingAdmissionPolicy", part);
  ASSERT_EQ(policies.size(), 2U);
  for (const YAML::Node& policy : policies) {
    const YAML::Node constraints = policy["spec"]["matchConstraints"];
    const YAML::Node rule = constraints["resourceRules"][0];
    const std::string resource = rule["resources"][0].as<std::string>();
    SCOPED_TRACE(resource);
    EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Fail");
    // Evaluated on the v1 form of every version; specs are immutable, so creation is the gate.
    EXPECT_EQ(constraints["matchPolicy"].as<std::string>(), "Equivalent");
    EXPECT_EQ(rule["apiVersions"][0].as<std::string>(), "v1");
    ASSERT_EQ(rule["operations"].size(), 1U);
    EXPECT_EQ(rule["operations"][0].as<std::string>(), "CREATE");
    const std::string exempt = policy["spec"]["matchConditions"][0]["expression"].as<std::string>();
    const std::string requests = policy["spec"]["variables"][0]["expression"].as<std::string>();
    std::string checks;
    for (const YAML::Node& variable : policy["spec"]["variables"]) {
      checks += variable["expression"].as<std::string>();
    }
    // Both the toleration by key and "every taint" are looked for, in exactly and firstAvailable.
    EXPECT_NE(checks.find("t.key == 'neuron.aws.com/reserved'"), std::string::npos) << checks;
    EXPECT_NE(checks.find("t.operator == 'Exists'"), std::string::npos) << checks;
    EXPECT_NE(checks.find("r.firstAvailable.exists"), std::string::npos) << checks;
    EXPECT_NE(checks.find("r.exactly.tolerations"), std::string::npos) << checks;
    ASSERT_EQ(policy["spec"]["validations"].size(), 2U);
    if (resource == "resourceclaimtemplates") {
      EXPECT_NE(requests.find("object.spec.spec.devices.requests"), std::string::npos) << requests;
      EXPECT_NE(exempt.find("system:serviceaccount:kube-system:torus-torus-ultraserver-operator"),
                std::string::npos)
          << exempt;
      EXPECT_EQ(exempt.find("resource-claim-controller"), std::string::npos) << exempt;
    } else {
      EXPECT_EQ(resource, "resourceclaims");
      EXPECT_NE(requests.find("object.spec.devices.requests"), std::string::npos) << requests;
      EXPECT_NE(exempt.find("system:serviceaccount:kube-system:resource-claim-controller"),
                std::string::npos)
          << exempt;
      EXPECT_EQ(exempt.find("ultraserver-operator"), std::string::npos) << exempt;
    }
  }
  const std::vector<YAML::Node> bindings =
      policiesNamed(objects, "ValidatingAdmissionPolicyBinding", part);
  ASSERT_EQ(bindings.size(), 2U);
  for (const YAML::Node& binding : bindings) {
    EXPECT_EQ(binding["spec"]["validationActions"][0].as<std::string>(), "Deny");
  }
}

}  // namespace
}  // namespace torus::testing
