// Reading kubeconfig files and merging several as kubectl does (client-go's
// tools/clientcmd ClientConfigLoadingRules.Load):
//
// - `--kubeconfig FILE` is the only file read, and must exist;
// - else every file of $KUBECONFIG (':'-separated; missing ones skipped, empty entries ignored),
//   else ~/.kube/config;
// - the first file that names a cluster, user or context wins it whole (a later file's entry of
//   the same name is ignored, even its fields the first lacked); the first current-context set
//   wins;
// - relative paths in an entry (certificate-authority, client-certificate, client-key,
//   tokenFile, and an exec command that contains a '/') are relative to the file it came from.
//
// What the entries mean is kube_config.cc's job; here they stay YAML.
#pragma once

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/base/result.h"

namespace torus::kube {

struct KubeconfigEntry {
  YAML::Node value;            // the entry's "cluster", "user" or "context" mapping
  std::filesystem::path file;  // where it came from: relative paths start at its directory
};

struct MergedKubeconfig {
  std::vector<std::filesystem::path> files;  // those read, in order
  std::string currentContext;
  std::map<std::string, KubeconfigEntry> clusters;
  std::map<std::string, KubeconfigEntry> users;
  std::map<std::string, KubeconfigEntry> contexts;
};

// The files kubectl would read: `explicitPath` alone when set, else $KUBECONFIG's list (the
// value of `kubeconfigEnv`), else HOME/.kube/config.
std::vector<std::filesystem::path> kubectlKubeconfigFiles(std::string_view explicitPath,
                                                          std::string_view kubeconfigEnv,
                                                          std::string_view home);

// Reads and merges `files`. With `mustExist` (an explicit --kubeconfig) a missing file is an
// error; otherwise missing files are skipped, and none found at all is an error naming them.
Result<MergedKubeconfig> readKubeconfigs(std::span<const std::filesystem::path> files,
                                         bool mustExist);

// `path` as written in `entry`'s file: relative ones resolved against that file's directory.
std::string resolvedPath(const KubeconfigEntry& entry, const std::string& path);

}  // namespace torus::kube
