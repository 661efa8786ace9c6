// The Helm chart, checked with the real helm binary (scripts/get-helm.sh): lint --strict and
// template for the default values and each documented variant, every rendered object parsed and
// checked, the scheduler configuration pointing at our Service with our verbs and resources, and
// deploy/torus.yaml equal to what the chart renders.
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "common/base/file_io.h"
#include "tests/integration/helm/chart_render.h"
#include "tests/integration/node_runtime/process_runner.h"

namespace torus::testing {
namespace {

const std::vector<Variant> kVariants = {
    {"defaults", {}},
    {"LNC 1 and the legacy resource",
     {"nodeAgent.lnc=1", "nodeAgent.resources={neuroncore,neuron,neurondevice}"}},
    {"without the extender and neuron-scheduler",
     {"extender.enabled=false", "scheduler.enabled=false"}},
    {"no hostPID (resets cannot see other containers)", {"nodeAgent.hostPID=false"}},
    {"with PodMonitors and the Grafana dashboard",
     {"nodeAgent.podMonitor.enabled=true", "extender.podMonitor.enabled=true",
      "grafanaDashboard.enabled=true", "grafanaDashboard.folder=Neuron"}},
    {"no admission policies for the agent", {"nodeAgent.ownNodeOnly=false"}},
    {"no cross-resource preemption", {"extender.crossResourcePreemption=false"}},
    {"DRA on nodes labelled for it, scraped",
     {"dra.enabled=true", "nodeAgent.podMonitor.enabled=true"}},
    {"the UltraServer operator", {"dra.enabled=true", "ultraserverOperator.enabled=true"}},
    {"mutual TLS between neuron-scheduler and the extender",
     {"extender.tls.secretName=extender-tls", "scheduler.extenderTLS.secretName=scheduler-tls"}},
    {"DRA on every node, whole chips only, faulty chips evicted",
     {"dra.enabled=true", "dra.allNodes=true", "dra.coreDevices=false",
      "dra.taintEffect=NoExecute"}},
};

TEST(HelmChart, LintsStrictlyForEveryVariant) {
  for (const Variant& variant : kVariants) {
    const ProcessResult lint =
        runProcess(helmArgs({TORUS_HELM, "lint", "--strict", kChart}, variant));
    EXPECT_EQ(lint.exitCode, 0) << variant.description << ":\n" << lint.out << lint.err;
  }
  const ProcessResult bad =
      runProcess({TORUS_HELM, "lint", "--strict", kChart, "--set", "nodeAgent.resources={gpu}"});
  EXPECT_NE(bad.exitCode, 0) << "the schema must refuse unknown resources";
  const ProcessResult badEffect = runProcess(
      {TORUS_HELM, "lint", "--strict", kChart, "--set", "dra.taintEffect=PreferNoSchedule"});
  EXPECT_NE(badEffect.exitCode, 0) << "the schema must refuse a node taint's effect for devices";
  const ProcessResult badClient = runProcess(
      {TORUS_HELM, "lint", "--strict", kChart, "--set", "scheduler.clientConnection.qbs=150"});
  EXPECT_NE(badClient.exitCode, 0) << "the schema must refuse a misspelt client setting";
}

TEST(HelmChart, EveryRenderedObjectIsWellFormed) {
  const std::set<std::string> namespaced = {"ServiceAccount", "DaemonSet",  "Deployment",
                                            "Service",        "ConfigMap",  "Role",
                                            "RoleBinding",    "PodMonitor", "NetworkPolicy"};
  for (const Variant& variant : kVariants) {
    SCOPED_TRACE(variant.description);
    const auto objects = render(variant);
    ASSERT_FALSE(objects.empty());
    for (const YAML::Node& object : objects) {
      ASSERT_TRUE(object["apiVersion"] && object["kind"]) << YAML::Dump(object);
      const std::string kind = object["kind"].as<std::string>();
      ASSERT_TRUE(object["metadata"]["name"]) << kind;
      if (namespaced.count(kind) != 0) {
        EXPECT_TRUE(object["metadata"]["namespace"]) << kind;
      }
      if (kind == "PodMonitor") {
        // It scrapes a port every workload it selects declares.
        std::set<std::string> components;
        const YAML::Node selector = object["spec"]["selector"];
        if (selector["matchLabels"]["app.kubernetes.io/component"]) {
          components.insert(
              selector["matchLabels"]["app.kubernetes.io/component"].as<std::string>());
        }
        for (const YAML::Node& expression : selector["matchExpressions"]) {
          if (expression["key"].as<std::string>() != "app.kubernetes.io/component") continue;
          for (const YAML::Node& value : expression["values"])
            components.insert(value.as<std::string>());
        }
        ASSERT_FALSE(components.empty());
        const std::string port = object["spec"]["podMetricsEndpoints"][0]["port"].as<std::string>();
        bool declared = false;
        for (const YAML::Node& workload : objects) {
          const std::string workloadKind = workload["kind"].as<std::string>();
          if (workloadKind != "DaemonSet" && workloadKind != "Deployment") continue;
          const YAML::Node pod = workload["spec"]["template"];
          const std::string component =
              pod["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>();
          if (components.count(component) == 0) continue;
          bool declares = false;
          for (const YAML::Node& container : pod["spec"]["containers"]) {
            for (const YAML::Node& declaredPort : container["ports"])
              declares = declares || declaredPort["name"].as<std::string>("") == port;
          }
          EXPECT_TRUE(declares) << component << " pods declare no port " << port;
          declared = declared || declares;
        }
        EXPECT_TRUE(declared) << "the PodMonitor selects no workload";
      }
      if (kind == "DaemonSet" || kind == "Deployment") {
        const YAML::Node pod = object["spec"]["template"];
        EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/component"].as<std::string>(),
                  object["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
                      .as<std::string>());
        for (const YAML::Node& container : pod["spec"]["containers"]) {
          EXPECT_TRUE(container["image"]) << kind;
          EXPECT_FALSE(container["securityContext"]["allowPrivilegeEscalation"].as<bool>(true));
        }
      }
    }
  }
}

// The agent's ClusterRole grants pods and nodes cluster-wide; the admission policies narrow its
// writes to its own node (their behaviour is proven on the real cluster, tests/e2e/cluster).
TEST(HelmChart, TheAgentsWritesAreNarrowedByAdmissionPolicies) {
  const auto countPolicies = [](const std::vector<YAML::Node>& objects) {
    std::set<std::string> policies;
    std::set<std::string> bound;
    for (const YAML::Node& object : objects) {
      const std::string kind = object["kind"].as<std::string>();
      if (kind == "ValidatingAdmissionPolicy") {
        policies.insert(object["metadata"]["name"].as<std::string>());
        EXPECT_EQ(object["spec"]["failurePolicy"].as<std::string>(), "Fail");
        EXPECT_NE(object["spec"]["matchConditions"][0]["expression"].as<std::string>().find(
                      "system:serviceaccount:kube-system:torus-torus-node-agent"),
                  std::string::npos);
      }
      if (kind == "ValidatingAdmissionPolicyBinding") {
        bound.insert(object["spec"]["policyName"].as<std::string>());
        EXPECT_EQ(object["spec"]["validationActions"][0].as<std::string>(), "Deny");
      }
    }
    EXPECT_EQ(policies, bound);
    return policies.size();
  };
  EXPECT_EQ(countPolicies(render(kVariants[0])), 2U);
  EXPECT_EQ(countPolicies(render({"off", {"nodeAgent.ownNodeOnly=false"}})), 0U);
}

// Regression: the agent mounted /sys and /dev read-write. It writes only neuronN/reset.
TEST(HelmChart, TheAgentMountsTheHostReadOnlyButForTheDriversResetFiles) {
  const auto mountsOf = [](const std::vector<YAML::Node>& objects) {
    std::map<std::string, bool> readOnlyByPath;
    for (const YAML::Node& object : objects) {
      if (object["kind"].as<std::string>() != "DaemonSet") continue;
      for (const YAML::Node& mount :
           object["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]) {
        readOnlyByPath[mount["mountPath"].as<std::string>()] =
            mount["readOnly"] && mount["readOnly"].as<bool>();
      }
    }
    return readOnlyByPath;
  };
  for (const Variant& variant :
       {kVariants[0], Variant{"simulated", {"nodeAgent.simulate.instanceType=trn2.48xlarge"}}}) {
    const auto mounts = mountsOf(render(variant));
    EXPECT_TRUE(mounts.at("/sys")) << variant.description;
    EXPECT_TRUE(mounts.at("/dev")) << variant.description;
    EXPECT_TRUE(mounts.at("/opt/aws")) << variant.description;
    const bool simulated = !variant.sets.empty();
    EXPECT_EQ(mounts.count("/sys/devices/virtual/neuron_device"), simulated ? 0U : 1U);
    if (!simulated) {
      EXPECT_FALSE(mounts.at("/sys/devices/virtual/neuron_device"));
    }
  }
}

// Every agent DaemonSet says what confines it: AppArmor's Unconfined by default (containerd's
// default profile refuses the reset write and the /proc reads), the shipped Localhost profile or
// SELinux options when asked; a Localhost profile without a name is refused at install.
TEST(HelmChart, TheAgentsSecurityModuleSettingsAreExplicit) {
  const auto agentContexts = [](const std::vector<YAML::Node>& objects) {
    std::vector<YAML::Node> contexts;
    for (const YAML::Node& object : objects) {
      if (object["kind"].as<std::string>() != "DaemonSet") continue;
      contexts.push_back(object["spec"]["template"]["spec"]["containers"][0]["securityContext"]);
    }
    return contexts;
  };
  const auto defaults = agentContexts(render({"dra", {"dra.enabled=true"}}));
  ASSERT_EQ(defaults.size(), 2U);  // the device-plugin and the DRA agent
  for (const YAML::Node& context : defaults) {
    EXPECT_EQ(context["appArmorProfile"]["type"].as<std::string>(""), "Unconfined");
    EXPECT_FALSE(context["seLinuxOptions"]);
  }
  const auto hardened =
      agentContexts(render({"the shipped profile, Bottlerocket's label",
                            {"dra.enabled=true", "nodeAgent.appArmorProfile.type=Localhost",
                             "nodeAgent.appArmorProfile.localhostProfile=torus-node-agent",
                             "nodeAgent.seLinuxOptions.type=super_t"}}));
  ASSERT_EQ(hardened.size(), 2U);
  for (const YAML::Node& context : hardened) {
    EXPECT_EQ(context["appArmorProfile"]["type"].as<std::string>(""), "Localhost");
    EXPECT_EQ(context["appArmorProfile"]["localhostProfile"].as<std::string>(""),
              "torus-node-agent");
    EXPECT_EQ(context["seLinuxOptions"]["type"].as<std::string>(""), "super_t");
    EXPECT_EQ(context["capabilities"]["add"].size(), 3U);  // the rest of the context kept
  }
  const auto runtimeDefault =
      agentContexts(render({"the runtime's default", {"nodeAgent.appArmorProfile=null"}}));
  ASSERT_EQ(runtimeDefault.size(), 1U);
  EXPECT_FALSE(runtimeDefault[0]["appArmorProfile"]);
  const ProcessResult unnamed = runProcess({TORUS_HELM, "template", "torus", kChart, "--set",
                                            "nodeAgent.appArmorProfile.type=Localhost"});
  EXPECT_NE(unnamed.exitCode, 0);
  EXPECT_NE(unnamed.err.find("localhostProfile"), std::string::npos) << unnamed.err;
}

// With DRA, each node runs exactly one agent: the DRA one where the mode label says dra, the
// device plugin elsewhere (or DRA everywhere with allNodes); DeviceClasses keep AWS's name and
// map the device plugin's resource names; a third policy keeps the agent to its own slices.
// A stopping device-plugin agent taints its node only while its DaemonSet will send another one
// (helm upgrade with the agent off, a narrower selector): it names that DaemonSet, and may read it
// and nothing else of its kind.
TEST(HelmChart, ThePluginAgentNamesItsOwnDaemonSetAndMayReadOnlyThat) {
  const std::vector<YAML::Node> objects = render(kVariants[0]);
  std::set<std::string> args;
  const YAML::Node* role = nullptr;
  const YAML::Node* binding = nullptr;
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>();
    const std::string name = object["metadata"]["name"].as<std::string>();
    if (kind == "DaemonSet" && name == "torus-torus-node-agent") {
      for (const YAML::Node& arg : object["spec"]["template"]["spec"]["containers"][0]["args"])
        args.insert(arg.as<std::string>());
    }
    if (name == "torus-torus-node-agent-daemonset") (kind == "Role" ? role : binding) = &object;
  }
  EXPECT_EQ(args.count("--daemonset=kube-system/torus-torus-node-agent"), 1U);
  ASSERT_NE(role, nullptr);
  ASSERT_NE(binding, nullptr);
  const YAML::Node rules = (*role)["rules"];
  ASSERT_EQ(rules.size(), 1U);
  EXPECT_EQ(rules[0]["resources"][0].as<std::string>(), "daemonsets");
  EXPECT_EQ(rules[0]["resourceNames"][0].as<std::string>(), "torus-torus-node-agent");
  EXPECT_EQ(rules[0]["verbs"].size(), 1U);
  EXPECT_EQ(rules[0]["verbs"][0].as<std::string>(), "get");
  EXPECT_EQ((*binding)["subjects"][0]["name"].as<std::string>(), "torus-torus-node-agent");
}

TEST(HelmChart, DraModeSplitsNodesByLabelAndInstallsItsClasses) {
  const auto daemonSets = [](const std::vector<YAML::Node>& objects) {
    std::map<std::string, YAML::Node> found;
    for (const YAML::Node& object : objects) {
      if (object["kind"].as<std::string>() == "DaemonSet") {
        found[object["metadata"]["name"].as<std::string>()] = object;
      }
    }
    return found;
  };
  const auto modeRule = [](const YAML::Node& daemonSet) -> std::string {
    const YAML::Node terms = daemonSet["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                                      ["requiredDuringSchedulingIgnoredDuringExecution"]
                                      ["nodeSelectorTerms"][0]["matchExpressions"];
    for (const YAML::Node& expression : terms) {
      if (expression["key"].as<std::string>() == "torus.dev/neuron-mode") {
        return expression["operator"].as<std::string>();
      }
    }
    return "";
  };
  const auto argsOf = [](const YAML::Node& daemonSet) {
    std::set<std::string> args;
    for (const YAML::Node& arg : daemonSet["spec"]["template"]["spec"]["containers"][0]["args"]) {
      args.insert(arg.as<std::string>());
    }
    return args;
  };

  const auto plain = daemonSets(render(kVariants[0]));
  ASSERT_EQ(plain.size(), 1U);
  EXPECT_EQ(modeRule(plain.begin()->second), "");

  const std::vector<YAML::Node> objects = render({"dra", {"dra.enabled=true"}});
  const auto split = daemonSets(objects);
  ASSERT_EQ(split.size(), 2U);
  EXPECT_EQ(modeRule(split.at("torus-torus-node-agent")), "NotIn");
  EXPECT_EQ(modeRule(split.at("torus-torus-node-agent-dra")), "In");
  const auto draArgs = argsOf(split.at("torus-torus-node-agent-dra"));
  EXPECT_TRUE(draArgs.count("--dra") == 1 && draArgs.count("--device-plugin=false") == 1);
  EXPECT_EQ(draArgs.count("--dra-plugins-dir=/var/lib/kubelet/plugins"), 1U);
  EXPECT_EQ(argsOf(split.at("torus-torus-node-agent")).count("--dra"), 0U);

  std::map<std::string, std::string> classes;  // name -> extendedResourceName
  int policies = 0;
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>();
    if (kind == "DeviceClass") {
      classes[object["metadata"]["name"].as<std::string>()] =
          object["spec"]["extendedResourceName"].as<std::string>("");
    }
    if (kind == "ValidatingAdmissionPolicy") ++policies;
  }
  EXPECT_EQ(classes, (std::map<std::string, std::string>{
                         {"neuron.aws.com", ""},
                         {"chip.neuron.aws.com", "aws.amazon.com/neuron"},
                         {"core.neuron.aws.com", "aws.amazon.com/neuroncore"}}));
  EXPECT_EQ(policies, 3);

  const auto everywhere = daemonSets(render(kVariants.back()));
  ASSERT_EQ(everywhere.size(), 1U);
  EXPECT_EQ(modeRule(everywhere.at("torus-torus-node-agent-dra")), "");
  EXPECT_EQ(argsOf(everywhere.at("torus-torus-node-agent-dra")).count("--dra-core-devices=false"),
            1U);
  EXPECT_EQ(
      argsOf(everywhere.at("torus-torus-node-agent-dra")).count("--dra-taint-effect=NoExecute"),
      1U);
}

// The DRA agent runs under its own ServiceAccount, whose role patches and watches no pod, and
// mounts only its own directory under kubelet's plugins (audit L7); the device-plugin agent's
// role has no DRA rule.
TEST(HelmChart, TheDraAgentHasItsOwnSmallerIdentityAndMounts) {
  std::map<std::string, YAML::Node> byName;  // "Kind/name"
  for (const YAML::Node& object : render({"dra", {"dra.enabled=true"}})) {
    byName[object["kind"].as<std::string>() + "/" + object["metadata"]["name"].as<std::string>()] =
        object;
  }
  const auto verbsOn = [&](const std::string& role, const std::string& resource) {
    std::set<std::string> verbs;
    for (const YAML::Node& rule : byName.at("ClusterRole/" + role)["rules"]) {
      for (const YAML::Node& name : rule["resources"]) {
        if (name.as<std::string>() != resource) continue;
        for (const YAML::Node& verb : rule["verbs"])
          verbs.insert(verb.as<std::string>());
      }
    }
    return verbs;
  };
  EXPECT_EQ(verbsOn("torus-torus-node-agent-dra", "pods"), std::set<std::string>{"get"});
  EXPECT_EQ(verbsOn("torus-torus-node-agent", "pods"),
            (std::set<std::string>{"list", "watch", "patch"}));
  EXPECT_TRUE(verbsOn("torus-torus-node-agent", "resourceslices").empty());
  EXPECT_EQ(verbsOn("torus-torus-node-agent-dra", "resourceclaims"), std::set<std::string>{"get"});

  const YAML::Node pod = byName.at("DaemonSet/torus-torus-node-agent-dra")["spec"]["template"];
  EXPECT_EQ(pod["spec"]["serviceAccountName"].as<std::string>(), "torus-torus-node-agent-dra");
  EXPECT_EQ(
      byName
          .at("DaemonSet/torus-torus-node-agent")["spec"]["template"]["spec"]["serviceAccountName"]
          .as<std::string>(),
      "torus-torus-node-agent");
  for (const YAML::Node& volume : pod["spec"]["volumes"]) {
    if (volume["name"].as<std::string>() != "kubelet-plugins") continue;
    EXPECT_EQ(volume["hostPath"]["path"].as<std::string>(),
              "/var/lib/kubelet/plugins/neuron.aws.com");
  }
  for (const YAML::Node& mount : pod["spec"]["containers"][0]["volumeMounts"]) {
    if (mount["name"].as<std::string>() != "kubelet-plugins") continue;
    EXPECT_EQ(mount["mountPath"].as<std::string>(), "/var/lib/kubelet/plugins/neuron.aws.com");
  }
  EXPECT_EQ(pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"].as<std::string>(),
            "/readyz");
}

// `helm test` on a cluster where every Neuron node is in DRA mode asks for a chip by claim:
// aws.amazon.com/neuroncore exists there only from 1.36 (extended-resource mapping).
TEST(HelmChart, HelmTestAsksByClaimWhereEveryNodeIsDra) {
  const auto testObjects = [](const Variant& variant) {
    std::map<std::string, YAML::Node> hooks;  // kind -> object
    for (const YAML::Node& object : render(variant)) {
      const YAML::Node annotations = object["metadata"]["annotations"];
      if (annotations && annotations["helm.sh/hook"].as<std::string>("") == "test") {
        hooks[object["kind"].as<std::string>()] = object;
      }
    }
    return hooks;
  };
  const auto plain = testObjects(kVariants[0]);
  ASSERT_EQ(plain.size(), 1U);
  EXPECT_EQ(
      plain.at("Pod")["spec"]["containers"][0]["resources"]["limits"]["aws.amazon.com/neuroncore"]
          .as<int>(),
      1);
  const auto dra = testObjects(kVariants.back());
  ASSERT_EQ(dra.size(), 2U);
  const YAML::Node pod = dra.at("Pod")["spec"];
  EXPECT_FALSE(pod["containers"][0]["resources"]["limits"]);
  EXPECT_EQ(pod["containers"][0]["resources"]["claims"][0]["name"].as<std::string>(), "neuron");
  EXPECT_EQ(pod["resourceClaims"][0]["resourceClaimTemplateName"].as<std::string>(),
            dra.at("ResourceClaimTemplate")["metadata"]["name"].as<std::string>());
  EXPECT_FALSE(pod["schedulerName"]) << "kube-scheduler allocates claims";
  EXPECT_EQ(dra.at("ResourceClaimTemplate")["spec"]["spec"]["devices"]["requests"][0]["exactly"]
                                           ["deviceClassName"]
                                               .as<std::string>(),
            "chip.neuron.aws.com");
}

// The UltraServer operator serves AWS's neuron.aws.com/v1beta1 API (off by default): both CRDs,
// namespaced; its Deployment; the DRA agent's reservations flag and its read of the
// NeuronUltraServers in the release's namespace.
TEST(HelmChart, UltraServerOperatorInstallsAwsApiAndTellsTheDraAgent) {
  const auto crdsOf = [](const std::vector<YAML::Node>& objects) {
    std::map<std::string, YAML::Node> found;  // kind -> CustomResourceDefinition
    for (const YAML::Node& object : objects) {
      if (object["kind"].as<std::string>() == "CustomResourceDefinition") {
        found[object["spec"]["names"]["kind"].as<std::string>()] = object;
      }
    }
    return found;
  };
  const auto argsOf = [](const YAML::Node& workload) {
    std::set<std::string> args;
    for (const YAML::Node& arg : workload["spec"]["template"]["spec"]["containers"][0]["args"]) {
      args.insert(arg.as<std::string>());
    }
    return args;
  };

  EXPECT_EQ(crdsOf(render(kVariants[0])).count("NeuronUltraServer"), 0U);

  const std::vector<YAML::Node> objects = render(
      {"the UltraServer operator", {"dra.enabled=true", "ultraserverOperator.enabled=true"}});
  const auto crds = crdsOf(objects);
  ASSERT_EQ(crds.size(), 2U);
  for (const char* kind : {"NeuronUltraServer", "NeuronUltraServerWorkload"}) {
    ASSERT_EQ(crds.count(kind), 1U) << kind;
    const YAML::Node& crd = crds.at(kind);
    EXPECT_EQ(crd["spec"]["group"].as<std::string>(), "neuron.aws.com") << kind;
    EXPECT_EQ(crd["spec"]["scope"].as<std::string>(), "Namespaced") << kind;
    EXPECT_EQ(crd["spec"]["versions"][0]["name"].as<std::string>(), "v1beta1") << kind;
    EXPECT_TRUE(crd["spec"]["versions"][0]["served"].as<bool>()) << kind;
    EXPECT_TRUE(crd["spec"]["versions"][0]["storage"].as<bool>()) << kind;
    // Uninstalling the chart must not delete users' workloads with their CRD.
    EXPECT_EQ(crd["metadata"]["annotations"]["helm.sh/resource-policy"].as<std::string>(""), "keep")
        << kind;
  }

  std::map<std::string, YAML::Node> workloads;                 // name -> Deployment or DaemonSet
  std::map<std::string, std::set<std::string>> roleResources;  // Role name -> resources
  std::map<std::string, std::string> roleBindings;             // Role name -> ServiceAccount
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>();
    const std::string name = object["metadata"]["name"].as<std::string>();
    if (kind == "Deployment" || kind == "DaemonSet") workloads[name] = object;
    if (kind == "Role") {
      EXPECT_EQ(object["metadata"]["namespace"].as<std::string>(), "kube-system") << name;
      for (const YAML::Node& rule : object["rules"]) {
        for (const YAML::Node& resource : rule["resources"]) {
          roleResources[name].insert(resource.as<std::string>());
        }
      }
    }
    if (kind == "RoleBinding") {
      roleBindings[object["roleRef"]["name"].as<std::string>()] =
          object["subjects"][0]["name"].as<std::string>();
    }
  }

  ASSERT_EQ(workloads.count("torus-torus-ultraserver-operator"), 1U);
  const YAML::Node operatorPod =
      workloads.at("torus-torus-ultraserver-operator")["spec"]["template"];
  const YAML::Node container = operatorPod["spec"]["containers"][0];
  ASSERT_EQ(container["command"].size(), 1U);
  EXPECT_EQ(container["command"][0].as<std::string>(),
            "/usr/local/bin/neuron-ultraserver-operator");
  const auto operatorArgs = argsOf(workloads.at("torus-torus-ultraserver-operator"));
  EXPECT_EQ(operatorArgs.count("--leader-elect=true"), 1U);
  EXPECT_EQ(operatorArgs.count("--health-probe-bind-address=:8081"), 1U);
  EXPECT_EQ(container["env"][0]["name"].as<std::string>(), "POD_NAMESPACE");

  ASSERT_EQ(workloads.count("torus-torus-node-agent-dra"), 1U);
  EXPECT_EQ(argsOf(workloads.at("torus-torus-node-agent-dra"))
                .count("--ultraserver-reservations=kube-system"),
            1U);
  ASSERT_EQ(workloads.count("torus-torus-node-agent"), 1U);  // the device plugin's nodes
  for (const std::string& arg : argsOf(workloads.at("torus-torus-node-agent"))) {
    EXPECT_EQ(arg.find("--ultraserver-reservations"), std::string::npos) << arg;
  }

  EXPECT_EQ(roleResources["torus-torus-ultraserver-operator"].count("neuronultraservers"), 1U);
  EXPECT_EQ(roleResources["torus-torus-ultraserver-operator"].count("leases"), 1U);
  EXPECT_EQ(roleBindings["torus-torus-ultraserver-operator"], "torus-torus-ultraserver-operator");
  EXPECT_EQ(roleResources["torus-torus-node-agent-ultraservers"],
            (std::set<std::string>{"neuronultraservers"}));
  EXPECT_EQ(roleBindings["torus-torus-node-agent-ultraservers"], "torus-torus-node-agent-dra");
}

// Its workloads get their nodes through DRA claims: without the DRA driver the chart refuses.
TEST(HelmChart, UltraServerOperatorNeedsDra) {
  const ProcessResult result =
      runProcess(helmArgs({TORUS_HELM, "template", "torus", kChart, "--namespace", "kube-system"},
                          {"the operator without DRA", {"ultraserverOperator.enabled=true"}}));
  EXPECT_NE(result.exitCode, 0) << "the operator must not render without dra.enabled";
  EXPECT_NE(result.err.find("dra.enabled"), std::string::npos) << result.err;
}

TEST(HelmChart, SchedulerConfigCallsOurServiceWithOurVerbsAndResources) {
  const auto objects = render(kVariants[0]);  // the defaults include both
  std::string service;
  YAML::Node config;
  for (const YAML::Node& object : objects) {
    const std::string kind = object["kind"].as<std::string>();
    if (kind == "Service") service = object["metadata"]["name"].as<std::string>();
    if (kind == "ConfigMap" && object["data"]["config.yaml"]) {
      config = YAML::Load(object["data"]["config.yaml"].as<std::string>());
    }
  }
  ASSERT_FALSE(service.empty());
  ASSERT_TRUE(config);
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "kubescheduler.config.k8s.io/v1");
  EXPECT_EQ(config["profiles"][0]["schedulerName"].as<std::string>(), "neuron-scheduler");
  const YAML::Node extender = config["extenders"][0];
  EXPECT_EQ(extender["urlPrefix"].as<std::string>(),
            "http://" + service + ".kube-system.svc:12345");
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    EXPECT_EQ(extender[std::string(verb) + "Verb"].as<std::string>(), verb);
  }
  EXPECT_TRUE(extender["nodeCacheCapable"].as<bool>());
  EXPECT_FALSE(extender["ignorable"].as<bool>());
  std::set<std::string> managed;
  for (const YAML::Node& resource : extender["managedResources"]) {
    managed.insert(resource["name"].as<std::string>());
    EXPECT_FALSE(resource["ignoredByScheduler"].as<bool>());
  }
  EXPECT_EQ(managed, (std::set<std::string>{"aws.amazon.com/neuron", "aws.amazon.com/neuroncore"}));
  // kube-scheduler's adaptive search unless asked: then every node (gangs see every UltraServer).
  EXPECT_FALSE(config["percentageOfNodesToScore"]);
  for (const YAML::Node& object :
       render({"search every node", {"scheduler.percentageOfNodesToScore=100"}})) {
    if (object["kind"].as<std::string>() == "ConfigMap" && object["data"]["config.yaml"]) {
      const YAML::Node searched = YAML::Load(object["data"]["config.yaml"].as<std::string>());
      EXPECT_EQ(searched["percentageOfNodesToScore"].as<int>(), 100);
    }
  }
  // Its liveness probe is kubeadm's for kube-scheduler: a busy scheduler is not restarted.
  int probed = 0;
  for (const YAML::Node& object : objects) {
    if (object["kind"].as<std::string>() != "Deployment") continue;
    const YAML::Node container = object["spec"]["template"]["spec"]["containers"][0];
    if (container["name"].as<std::string>() != "kube-scheduler") continue;
    const YAML::Node probe = container["livenessProbe"];
    EXPECT_EQ(probe["timeoutSeconds"].as<int>(), 15);
    EXPECT_EQ(probe["periodSeconds"].as<int>() * probe["failureThreshold"].as<int>(), 80);
    // And kubeadm's CPU request: not BestEffort, whose CPU weight on a busy node is the minimum.
    EXPECT_EQ(container["resources"]["requests"]["cpu"].as<std::string>(), "100m");
    ++probed;
  }
  EXPECT_EQ(probed, 1);
  // Its client's rate limit is kube-scheduler's own unless set (DRA clusters raise it).
  EXPECT_FALSE(config["clientConnection"]);
  for (const YAML::Node& object :
       render({"a raised client rate limit",
               {"scheduler.clientConnection.qps=150", "scheduler.clientConnection.burst=300"}})) {
    if (object["kind"].as<std::string>() == "ConfigMap" && object["data"]["config.yaml"]) {
      const YAML::Node raised = YAML::Load(object["data"]["config.yaml"].as<std::string>());
      EXPECT_EQ(raised["clientConnection"]["qps"].as<int>(), 150);
      EXPECT_EQ(raised["clientConnection"]["burst"].as<int>(), 300);
    }
  }
}

TEST(DeployManifests, SelfManagedSchedulerConfigNamesOurVerbsAndResources) {
  const YAML::Node config = YAML::LoadFile(std::string(TORUS_SOURCE_DIR) +
                                           "/deploy/self-managed/kube-scheduler-config.yaml");
  EXPECT_EQ(config["kind"].as<std::string>(), "KubeSchedulerConfiguration");
  const YAML::Node extender = config["extenders"][0];
  EXPECT_EQ(extender["urlPrefix"].as<std::string>(), "http://127.0.0.1:32700");
  EXPECT_EQ(extender["filterVerb"].as<std::string>(), "filter");
  EXPECT_EQ(extender["bindVerb"].as<std::string>(), "bind");
  EXPECT_TRUE(extender["nodeCacheCapable"].as<bool>());
  EXPECT_EQ(extender["managedResources"].size(), 2U);
  const YAML::Node service =
      YAML::LoadFile(std::string(TORUS_SOURCE_DIR) + "/deploy/self-managed/extender-nodeport.yaml");
  EXPECT_EQ(service["spec"]["ports"][0]["nodePort"].as<int>(), 32700);
  for (const char* example : {"one-core", "four-cores", "one-device", "sixteen-devices"}) {
    const YAML::Node pod =
        YAML::LoadFile(std::string(TORUS_SOURCE_DIR) + "/deploy/examples/" + example + ".yaml");
    EXPECT_EQ(pod["kind"].as<std::string>(), "Pod") << example;
    EXPECT_TRUE(pod["spec"]["containers"][0]["resources"]["limits"]) << example;
    EXPECT_EQ(pod["spec"]["schedulerName"].as<std::string>(), "neuron-scheduler") << example;
  }
}

// The gang example: every pod of the Indexed Job carries the gang's labels, and the gang's size
// is the Job's parallelism (a smaller one would never be complete, a larger one never start).
TEST(DeployManifests, GangJobsSizeIsItsParallelism) {
  const auto documents =
      YAML::LoadAllFromFile(std::string(TORUS_SOURCE_DIR) + "/deploy/examples/gang-job.yaml");
  ASSERT_EQ(documents.size(), 2U);
  const YAML::Node& job = documents[1];
  ASSERT_EQ(job["kind"].as<std::string>(), "Job");
  const YAML::Node labels = job["spec"]["template"]["metadata"]["labels"];
  EXPECT_EQ(labels["torus.dev/gang"].as<std::string>(), job["metadata"]["name"].as<std::string>());
  EXPECT_EQ(labels["torus.dev/gang-size"].as<int>(), job["spec"]["parallelism"].as<int>());
  EXPECT_EQ(job["spec"]["completions"].as<int>(), job["spec"]["parallelism"].as<int>());
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["schedulerName"].as<std::string>(), "neuron-scheduler");
  EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["aws.amazon.com/neuron"].as<int>(), 16);
}

// The two-node job: a headless Service pod 0's name resolves through, and an Indexed Job whose
// pods land on different nodes and bootstrap at that name.
TEST(DeployManifests, TwoNodeJobBootstrapsThroughItsHeadlessService) {
  const auto documents = YAML::LoadAllFromFile(std::string(TORUS_SOURCE_DIR) +
                                               "/deploy/examples/two-node-allreduce.yaml");
  ASSERT_EQ(documents.size(), 2U);
  const YAML::Node& service = documents[0];
  const YAML::Node& job = documents[1];
  EXPECT_EQ(service["kind"].as<std::string>(), "Service");
  EXPECT_EQ(service["spec"]["clusterIP"].as<std::string>(), "None");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["spec"]["completionMode"].as<std::string>(), "Indexed");
  const YAML::Node pod = job["spec"]["template"]["spec"];
  const std::string name = job["metadata"]["name"].as<std::string>();
  EXPECT_EQ(pod["subdomain"].as<std::string>(), service["metadata"]["name"].as<std::string>());
  EXPECT_EQ(pod["schedulerName"].as<std::string>(), "neuron-scheduler");
  EXPECT_EQ(pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
               ["topologyKey"]
                   .as<std::string>(),
            "kubernetes.io/hostname");
  const YAML::Node container = pod["containers"][0];
  EXPECT_EQ(container["env"][0]["name"].as<std::string>(), "NEURON_RT_ROOT_COMM_ID");
  EXPECT_EQ(container["env"][0]["value"].as<std::string>(),
            name + "-0." + service["metadata"]["name"].as<std::string>() + ":29500");
  EXPECT_NE(container["command"][2].as<std::string>().find("--first-rank"), std::string::npos);
  // The bootstrap is authenticated with the job's secret, from a Secret, never a literal.
  bool secretFromSecret = false;
  for (const YAML::Node& env : container["env"]) {
    if (env["name"].as<std::string>() == "TORUS_COLL_JOB_SECRET") {
      secretFromSecret = env["valueFrom"]["secretKeyRef"]["key"].IsDefined() && !env["value"];
    }
  }
  EXPECT_TRUE(secretFromSecret);
}

TEST(HelmChart, DeployManifestsMatchTheChart) {
  const ProcessResult rendered = runProcess(
      {TORUS_HELM, "template", "torus", kChart, "--namespace", "kube-system", "--no-hooks"});
  ASSERT_EQ(rendered.exitCode, 0) << rendered.err;
  auto committed = readSmallFile(std::string(TORUS_SOURCE_DIR) + "/deploy/torus.yaml", 4 << 20);
  ASSERT_TRUE(committed.ok()) << committed.error().message;
  EXPECT_EQ(*committed, rendered.out)
      << "deploy/torus.yaml is out of date; regenerate it with deploy/render.sh";
}

}  // namespace
}  // namespace torus::testing
