// The chart's protection of the extender's verbs: a NetworkPolicy admitting only neuron-scheduler
// to them, probes and metrics on a port of their own, and mutual TLS between neuron-scheduler and
// the extender from two Secrets.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "tests/integration/helm/chart_render.h"

namespace torus::testing {
namespace {

YAML::Node extenderDeployment(const std::vector<YAML::Node>& objects) {
  for (const YAML::Node& object : objectsOfKind(objects, "Deployment")) {
    if (object["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>("") ==
        "scheduler-extender") {
      return object;
    }
  }
  return {};
}

YAML::Node schedulerConfig(const std::vector<YAML::Node>& objects) {
  for (const YAML::Node& object : objectsOfKind(objects, "ConfigMap")) {
    if (object["data"]["config.yaml"]) {
      return YAML::Load(object["data"]["config.yaml"].as<std::string>());
    }
  }
  return {};
}

std::vector<std::string> argsOf(const YAML::Node& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0]["args"]
      .as<std::vector<std::string>>();
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(HelmChart, OnlyNeuronSchedulerMayCallTheExtendersVerbs) {
  const auto objects = render({"defaults", {}});
  const auto policies = objectsOfKind(objects, "NetworkPolicy");
  ASSERT_EQ(policies.size(), 1U);
  const YAML::Node spec = policies[0]["spec"];
  EXPECT_EQ(spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"].as<std::string>(),
            "scheduler-extender");
  EXPECT_EQ(spec["policyTypes"].as<std::vector<std::string>>(),
            std::vector<std::string>{"Ingress"});
  ASSERT_EQ(spec["ingress"].size(), 2U);
  // The verbs' port: neuron-scheduler's pods, nobody else.
  const YAML::Node verbs = spec["ingress"][0];
  EXPECT_EQ(verbs["ports"][0]["port"].as<int>(), 12345);
  ASSERT_EQ(verbs["from"].size(), 1U);
  EXPECT_EQ(verbs["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                .as<std::string>(),
            "scheduler");
  // The health port (probes, Prometheus) is open: it answers health and counts only.
  const YAML::Node health = spec["ingress"][1];
  EXPECT_EQ(health["ports"][0]["port"].as<int>(), 12346);
  EXPECT_FALSE(health["from"]);

  const YAML::Node deployment = extenderDeployment(objects);
  ASSERT_TRUE(deployment);
  EXPECT_TRUE(has(argsOf(deployment), "--health-listen=0.0.0.0:12346"));
  const YAML::Node container = deployment["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["port"].as<std::string>(), "health");
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["port"].as<std::string>(), "health");
  for (const YAML::Node& monitor :
       objectsOfKind(render({"scraped", {"extender.podMonitor.enabled=true"}}), "PodMonitor")) {
    if (monitor["metadata"]["name"].as<std::string>().find("extender") != std::string::npos) {
      EXPECT_EQ(monitor["spec"]["podMetricsEndpoints"][0]["port"].as<std::string>(), "health");
    }
  }

  // The cluster's own kube-scheduler (or Prometheus alone) is admitted by the values that say so.
  const auto opened = objectsOfKind(
      render(
          {"the control plane calls the extender",
           {"extender.networkPolicy.extraFrom[0].ipBlock.cidr=10.0.0.0/24",
            "extender.networkPolicy.healthFrom[0].namespaceSelector.matchLabels.name=monitoring"}}),
      "NetworkPolicy");
  ASSERT_EQ(opened.size(), 1U);
  EXPECT_EQ(opened[0]["spec"]["ingress"][0]["from"][1]["ipBlock"]["cidr"].as<std::string>(),
            "10.0.0.0/24");
  EXPECT_EQ(opened[0]["spec"]["ingress"][1]["from"][0]["namespaceSelector"]["matchLabels"]["name"]
                .as<std::string>(),
            "monitoring");
  EXPECT_TRUE(objectsOfKind(render({"no policy", {"extender.networkPolicy.enabled=false"}}),
                            "NetworkPolicy")
                  .empty());
}

TEST(HelmChart, MutualTlsBetweenNeuronSchedulerAndTheExtenderFromTwoSecrets) {
  const auto plain = render({"defaults", {}});
  EXPECT_FALSE(schedulerConfig(plain)["extenders"][0]["enableHTTPS"].as<bool>());
  EXPECT_FALSE(
      has(argsOf(extenderDeployment(plain)), "--tls-client-ca-file=/etc/torus/tls/ca.crt"));

  const auto objects =
      render({"mutual TLS",
              {"extender.tls.secretName=extender-tls", "scheduler.extenderTLS.secretName=sched-tls",
               "scheduler.extenderTLS.serverName=extender.example"}});
  const YAML::Node extender = extenderDeployment(objects);
  ASSERT_TRUE(extender);
  const auto args = argsOf(extender);
  for (const char* flag :
       {"--tls-cert-file=/etc/torus/tls/tls.crt", "--tls-key-file=/etc/torus/tls/tls.key",
        "--tls-client-ca-file=/etc/torus/tls/ca.crt"}) {
    EXPECT_TRUE(has(args, flag)) << flag;
  }
  const YAML::Node pod = extender["spec"]["template"]["spec"];
  EXPECT_EQ(pod["volumes"][0]["secret"]["secretName"].as<std::string>(), "extender-tls");
  EXPECT_EQ(pod["containers"][0]["volumeMounts"][0]["mountPath"].as<std::string>(),
            "/etc/torus/tls");

  const YAML::Node call = schedulerConfig(objects)["extenders"][0];
  EXPECT_TRUE(call["enableHTTPS"].as<bool>());
  EXPECT_EQ(call["urlPrefix"].as<std::string>().rfind("https://", 0), 0U);
  EXPECT_EQ(call["tlsConfig"]["certFile"].as<std::string>(), "/etc/torus/extender-tls/tls.crt");
  EXPECT_EQ(call["tlsConfig"]["keyFile"].as<std::string>(), "/etc/torus/extender-tls/tls.key");
  EXPECT_EQ(call["tlsConfig"]["caFile"].as<std::string>(), "/etc/torus/extender-tls/ca.crt");
  EXPECT_EQ(call["tlsConfig"]["serverName"].as<std::string>(), "extender.example");
  bool mounted = false;
  for (const YAML::Node& deployment : objectsOfKind(objects, "Deployment")) {
    if (deployment["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>("") !=
        "scheduler") {
      continue;
    }
    for (const YAML::Node& volume : deployment["spec"]["template"]["spec"]["volumes"]) {
      mounted = mounted || (volume["secret"] &&
                            volume["secret"]["secretName"].as<std::string>() == "sched-tls");
    }
  }
  EXPECT_TRUE(mounted) << "neuron-scheduler mounts its client certificate";
}

}  // namespace
}  // namespace torus::testing
