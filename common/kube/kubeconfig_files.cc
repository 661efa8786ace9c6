#include "common/kube/kubeconfig_files.h"

#include <algorithm>
#include <system_error>

#include "common/base/file_io.h"
#include "common/base/strings.h"

namespace torus::kube {
namespace {

constexpr std::size_t kMaxKubeconfigBytes = 4 << 20;

Error bad(const std::string& where, const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument, where + ": " + why);
}

// Adds the entries of one file's `listName` ("clusters") under their names, keeping any an
// earlier file already gave.
Result<void> mergeList(const YAML::Node& root, const char* listName, const char* field,
                       const std::filesystem::path& file,
                       std::map<std::string, KubeconfigEntry>& into) {
  const YAML::Node list = root[listName];
  if (!list || list.IsNull()) return okResult();
  if (!list.IsSequence())
    return bad("kubeconfig " + file.string(), std::string(listName) + " is not a list");
  for (const YAML::Node& item : list) {
    // operator[] of a scalar or list throws, and a missing key reads as an invalid node on
    // which IsMap() throws (found by fuzzing): test before indexing.
    if (!item.IsMap() || !item["name"] || !item["name"].IsScalar()) continue;
    const std::string name = item["name"].as<std::string>("");
    const YAML::Node value = item[field];
    if (name.empty() || into.contains(name)) continue;
    into.emplace(name, KubeconfigEntry{value && value.IsMap() ? value : YAML::Node(), file});
  }
  return okResult();
}

}  // namespace

std::vector<std::filesystem::path> kubectlKubeconfigFiles(std::string_view explicitPath,
                                                          std::string_view kubeconfigEnv,
                                                          std::string_view home) {
  if (!explicitPath.empty()) return {std::filesystem::path(explicitPath)};
  std::vector<std::filesystem::path> files;
  for (std::string_view rest = kubeconfigEnv; !rest.empty();) {
    const std::size_t colon = rest.find(':');
    const std::string_view one = rest.substr(0, colon);
    if (!one.empty()) {
      const std::filesystem::path path(one);
      // kubectl reads a file listed twice once.
      if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
    }
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  if (files.empty()) files.push_back(std::filesystem::path(home) / ".kube" / "config");
  return files;
}

Result<MergedKubeconfig> readKubeconfigs(std::span<const std::filesystem::path> files,
                                         bool mustExist) {
  MergedKubeconfig merged;
  std::vector<std::string> missing;
  for (const std::filesystem::path& file : files) {
    const std::string where = "kubeconfig " + file.string();
    std::error_code ignored;
    if (!mustExist && !std::filesystem::exists(file, ignored)) {
      missing.push_back(file.string());
      continue;
    }
    auto text = readSmallFile(file, kMaxKubeconfigBytes);
    if (!text) return std::move(text).error().withContext("kubeconfig");
    YAML::Node root;
    try {
      root = YAML::Load(*text);
    } catch (const YAML::Exception& error) {
      return bad(where, std::string("not valid YAML: ") + error.what());
    }
    if (root.IsNull()) continue;  // an empty file, as kubectl takes it
    // A file that parses as a scalar (say /etc/hostname) used to abort on root["current-context"].
    if (!root.IsMap()) return bad(where, "expected a kubeconfig (a YAML mapping)");
    merged.files.push_back(file);
    if (merged.currentContext.empty() && root["current-context"] &&
        root["current-context"].IsScalar()) {
      merged.currentContext = root["current-context"].as<std::string>("");
    }
    TORUS_RETURN_IF_ERROR(mergeList(root, "clusters", "cluster", file, merged.clusters), where);
    TORUS_RETURN_IF_ERROR(mergeList(root, "users", "user", file, merged.users), where);
    TORUS_RETURN_IF_ERROR(mergeList(root, "contexts", "context", file, merged.contexts), where);
  }
  if (merged.files.empty()) {
    std::string list;
    for (const std::string& file : missing) {
      if (!list.empty()) list += ", ";
      list += file;
    }
    return makeError(ErrorCode::kNotFound, "no kubeconfig: " +
                                               (list.empty() ? std::string("every file is empty")
                                                             : "none of " + list + " exists") +
                                               " (pass --kubeconfig or set KUBECONFIG)");
  }
  return merged;
}

std::string resolvedPath(const KubeconfigEntry& entry, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (entry.file.parent_path() / path).string();
}

}  // namespace torus::kube
