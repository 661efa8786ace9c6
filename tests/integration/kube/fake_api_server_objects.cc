// The API stand-in's ResourceSlices (resource.k8s.io/v1), as the slice publisher uses them: list
// and watch go through the shared handlers; create (generateName, ?dryRun=All), replace (the
// resourceVersion precondition) and delete are here, with the fields a switched-off feature
// drops removed from what is stored and answered.
#include "tests/integration/kube/fake_api_server.h"

namespace torus::testing {
namespace {

using nlohmann::json;

constexpr const char* kSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";

void eraseFromDevices(json& spec, const char* field) {
  if (!spec.contains("devices") || !spec["devices"].is_array()) return;
  for (json& device : spec["devices"]) {
    if (device.is_object()) device.erase(field);
  }
}

}  // namespace

void FakeApiServer::dropSliceFields(bool counters, bool taints) {
  std::lock_guard lock(mutex_);
  dropCounters_ = counters;
  dropTaints_ = taints;
}

json FakeApiServer::asStoredLocked(json slice) const {
  if (!slice.contains("spec") || !slice["spec"].is_object()) return slice;
  json& spec = slice["spec"];
  if (dropCounters_) {
    spec.erase("sharedCounters");
    eraseFromDevices(spec, "consumesCounters");
  }
  if (dropTaints_) eraseFromDevices(spec, "taints");
  return slice;
}

void FakeApiServer::serveResourceSlices() {
  server_.Get(kSlicesPath, [this](const httplib::Request& request, httplib::Response& response) {
    handleList(kResourceSlices, request, response);
  });
  server_.Post(kSlicesPath, [this](const httplib::Request& request, httplib::Response& response) {
    recordWrite(request);
    if (injectedFailure(request, response)) return;
    json slice = json::parse(request.body, nullptr, false);
    if (!slice.is_object() || !slice.contains("metadata") || !slice["metadata"].is_object()) {
      fail(response, 400, "BadRequest", "a ResourceSlice needs metadata");
      return;
    }
    const bool dryRun = request.get_param_value("dryRun") == "All";
    std::lock_guard lock(mutex_);
    json& metadata = slice["metadata"];
    if (!metadata.contains("name") && metadata.contains("generateName")) {
      metadata["name"] =
          metadata["generateName"].get<std::string>() + std::to_string(++generatedNames_);
    }
    const std::string name = metadata.value("name", "");
    if (name.empty()) {
      fail(response, 422, "Invalid", "metadata.name or metadata.generateName is required");
      return;
    }
    if (objects_[kResourceSlices].contains(name)) {
      fail(response, 409, "AlreadyExists", "resourceslices \"" + name + "\" already exists");
      return;
    }
    metadata["uid"] = "uid-" + std::to_string(++uids_);
    json stored = asStoredLocked(std::move(slice));
    if (!dryRun) {
      changeLocked(kResourceSlices, "ADDED", stored);
      stored = objects_[kResourceSlices][name];
    }
    response.status = 201;
    response.set_content(stored.dump(), "application/json");
  });
  server_.Put(std::string(kSlicesPath) + "/([^/]+)",
              [this](const httplib::Request& request, httplib::Response& response) {
                recordWrite(request);
                if (injectedFailure(request, response)) return;
                const std::string name = request.matches[1];
                json slice = json::parse(request.body, nullptr, false);
                std::lock_guard lock(mutex_);
                const auto found = objects_[kResourceSlices].find(name);
                if (found == objects_[kResourceSlices].end()) {
                  fail(response, 404, "NotFound", "resourceslices \"" + name + "\" not found");
                  return;
                }
                if (!slice.is_object() || slice["metadata"].value("resourceVersion", "") !=
                                              found->second["metadata"]["resourceVersion"]) {
                  fail(response, 409, "Conflict",
                       "the object has been modified; please apply your changes to the latest "
                       "version and try again");
                  return;
                }
                slice["metadata"]["uid"] = found->second["metadata"]["uid"];
                changeLocked(kResourceSlices, "MODIFIED", asStoredLocked(std::move(slice)));
                response.set_content(objects_[kResourceSlices][name].dump(), "application/json");
              });
  server_.Delete(std::string(kSlicesPath) + "/([^/]+)",
                 [this](const httplib::Request& request, httplib::Response& response) {
                   recordWrite(request);
                   if (injectedFailure(request, response)) return;
                   const std::string name = request.matches[1];
                   std::lock_guard lock(mutex_);
                   const auto found = objects_[kResourceSlices].find(name);
                   if (found == objects_[kResourceSlices].end()) {
                     fail(response, 404, "NotFound", "resourceslices \"" + name + "\" not found");
                     return;
                   }
                   const json gone = found->second;
                   changeLocked(kResourceSlices, "DELETED", gone);
                   response.set_content(gone.dump(), "application/json");
                 });
}

}  // namespace torus::testing
