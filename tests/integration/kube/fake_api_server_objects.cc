// The API stand-in's objects that clients write whole: ResourceSlices (resource.k8s.io/v1,
// cluster-scoped, as the slice publisher uses them) and Leases (coordination.k8s.io/v1,
// namespaced, as leader election uses them). List and watch go through the shared handlers;
// create (generateName, ?dryRun=All), replace (the resourceVersion precondition) and delete are
// here, with the fields a switched-off feature drops removed from the slices stored and answered.
#include "tests/integration/kube/fake_api_server.h"

namespace torus::testing {
namespace {

using nlohmann::json;

constexpr const char* kSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";
constexpr const char* kLeasesPath = R"(/apis/coordination.k8s.io/v1/namespaces/([^/]+)/leases)";

void eraseFromDevices(json& spec, const char* field) {
  if (!spec.contains("devices") || !spec["devices"].is_array()) return;
  for (json& device : spec["devices"]) {
    if (device.is_object()) device.erase(field);
  }
}

// The store's key of the object a request names: "namespace/name" when the route has a
// namespace, else "name".
std::string keyFrom(const httplib::Request& request) {
  return request.matches.size() > 2
             ? std::string(request.matches[1]) + "/" + std::string(request.matches[2])
             : std::string(request.matches[1]);
}

// The object's name as the request names it (the last capture), for messages.
std::string nameFrom(const httplib::Request& request) {
  return request.matches[request.matches.size() - 1];
}

}  // namespace

void FakeApiServer::dropSliceFields(bool counters, bool taints) {
  std::lock_guard lock(mutex_);
  dropCounters_ = counters;
  dropTaints_ = taints;
}

json FakeApiServer::asStoredLocked(const std::string& collection, json object) const {
  if (collection != kResourceSlices || !object.contains("spec") || !object["spec"].is_object()) {
    return object;
  }
  json& spec = object["spec"];
  if (dropCounters_) {
    spec.erase("sharedCounters");
    eraseFromDevices(spec, "consumesCounters");
  }
  if (dropTaints_) eraseFromDevices(spec, "taints");
  return object;
}

void FakeApiServer::serveWrittenObjects() {
  server_.Get(kSlicesPath, [this](const httplib::Request& request, httplib::Response& response) {
    handleList(kResourceSlices, request, response);
  });
  serveWholeObjectWrites(kResourceSlices, kSlicesPath, "");
  server_.Get(std::string(kLeasesPath) + "/([^/]+)",
              [this](const httplib::Request& request, httplib::Response& response) {
                if (injectedFailure(request, response)) return;
                const std::string key = keyFrom(request);
                if (auto lease = get(kLeases, key)) {
                  response.set_content(lease->dump(), "application/json");
                } else {
                  fail(response, 404, "NotFound",
                       "leases.coordination.k8s.io \"" + nameFrom(request) + "\" not found");
                }
              });
  serveWholeObjectWrites(kLeases, kLeasesPath, "coordination.k8s.io");
  server_.Get(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets)",
              [this](const httplib::Request& request, httplib::Response& response) {
                handleList(kDaemonSets, request, response, request.matches[1]);
              });
  server_.Get(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+))",
              [this](const httplib::Request& request, httplib::Response& response) {
                if (injectedFailure(request, response)) return;
                if (auto daemonSet = get(kDaemonSets, keyFrom(request))) {
                  response.set_content(daemonSet->dump(), "application/json");
                } else {
                  fail(response, 404, "NotFound",
                       "daemonsets.apps \"" + nameFrom(request) + "\" not found");
                }
              });
}

void FakeApiServer::serveWholeObjectWrites(const std::string& collection, const std::string& path,
                                           const std::string& group) {
  const std::string kind = group.empty() ? collection : collection + "." + group;
  server_.Post(path, [this, collection, kind](const httplib::Request& request,
                                              httplib::Response& response) {
    recordWrite(request);
    if (injectedFailure(request, response)) return;
    json object = json::parse(request.body, nullptr, false);
    if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object()) {
      fail(response, 400, "BadRequest", "the object needs metadata");
      return;
    }
    const bool dryRun = request.get_param_value("dryRun") == "All";
    std::lock_guard lock(mutex_);
    json& metadata = object["metadata"];
    if (!metadata.contains("name") && metadata.contains("generateName")) {
      metadata["name"] =
          metadata["generateName"].get<std::string>() + std::to_string(++generatedNames_);
    }
    if (metadata.value("name", "").empty()) {
      fail(response, 422, "Invalid", "metadata.name or metadata.generateName is required");
      return;
    }
    if (request.matches.size() > 1) metadata["namespace"] = std::string(request.matches[1]);
    const std::string key = keyOf(collection, object);
    if (objects_[collection].contains(key)) {
      fail(response, 409, "AlreadyExists",
           kind + " \"" + metadata["name"].get<std::string>() + "\" already exists");
      return;
    }
    metadata["uid"] = "uid-" + std::to_string(++uids_);
    json stored = asStoredLocked(collection, std::move(object));
    if (!dryRun) {
      changeLocked(collection, "ADDED", stored);
      stored = objects_[collection][key];
    }
    response.status = 201;
    response.set_content(stored.dump(), "application/json");
  });
  server_.Put(path + "/([^/]+)", [this, collection, kind](const httplib::Request& request,
                                                          httplib::Response& response) {
    recordWrite(request);
    if (injectedFailure(request, response)) return;
    const std::string key = keyFrom(request);
    json object = json::parse(request.body, nullptr, false);
    std::lock_guard lock(mutex_);
    const auto found = objects_[collection].find(key);
    if (found == objects_[collection].end()) {
      fail(response, 404, "NotFound", kind + " \"" + nameFrom(request) + "\" not found");
      return;
    }
    if (!object.is_object() || !object.contains("metadata") ||
        object["metadata"].value("resourceVersion", "") !=
            found->second["metadata"]["resourceVersion"]) {
      fail(response, 409, "Conflict",
           "Operation cannot be fulfilled on " + kind + " \"" + nameFrom(request) +
               "\": the object has been modified; please apply your changes to the latest "
               "version and try again");
      return;
    }
    object["metadata"]["uid"] = found->second["metadata"]["uid"];
    changeLocked(collection, "MODIFIED", asStoredLocked(collection, std::move(object)));
    response.set_content(objects_[collection][key].dump(), "application/json");
  });
  server_.Delete(path + "/([^/]+)", [this, collection, kind](const httplib::Request& request,
                                                             httplib::Response& response) {
    recordWrite(request);
    if (injectedFailure(request, response)) return;
    const std::string key = keyFrom(request);
    std::lock_guard lock(mutex_);
    const auto found = objects_[collection].find(key);
    if (found == objects_[collection].end()) {
      fail(response, 404, "NotFound", kind + " \"" + nameFrom(request) + "\" not found");
      return;
    }
    const json gone = found->second;
    changeLocked(collection, "DELETED", gone);
    response.set_content(gone.dump(), "application/json");
  });
}

}  // namespace torus::testing
