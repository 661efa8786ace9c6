// The Kubernetes API stand-in's behaviour (fake_api_server.h says what it serves). Over 400
// lines on purpose: list, watch (resourceVersion, 410 when expired), merge and status patches,
// bindings, created objects and injected failures are one state machine over one object store,
// and tests read it as the contract the real API server keeps.
#include "tests/integration/kube/fake_api_server.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <variant>

#include "tests/integration/kube/fake_label_selector.h"

namespace torus::testing {
namespace {

using nlohmann::json;

// A field selector as the API server reads one for pods, nodes and ResourceSlices: comma-separated
// terms FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE, all of which must hold; empty matches
// everything.
struct FieldTerm {
  std::string field;
  bool equal = true;
  std::string value;
};

std::string fieldOf(const json& object, const std::string& field) {
  const auto dot = field.find('.');
  const auto outer = object.find(field.substr(0, dot));
  if (dot == std::string::npos || outer == object.end() || !outer->is_object()) return "";
  return outer->value(field.substr(dot + 1), "");
}

// The terms, or the API server's message for a selector it refuses.
std::variant<std::vector<FieldTerm>, std::string> parseFieldSelector(const std::string& text) {
  static const std::set<std::string> kSupported = {"metadata.name", "metadata.namespace",
                                                   "spec.nodeName", "spec.driver", "status.phase"};
  std::vector<FieldTerm> terms;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string term = text.substr(start, end - start);
    start = end + 1;
    FieldTerm parsed;
    std::size_t at = term.find("!=");
    std::size_t width = 2;
    if (at != std::string::npos) {
      parsed.equal = false;
    } else if ((at = term.find("==")) == std::string::npos) {
      at = term.find('=');
      width = 1;
    }
    if (at == std::string::npos)
      return "invalid selector: '" + text + "'; can't understand '" + term + "'";
    parsed.field = term.substr(0, at);
    parsed.value = term.substr(at + width);
    if (kSupported.count(parsed.field) == 0) {
      return "field label not supported: " + parsed.field;
    }
    terms.push_back(std::move(parsed));
  }
  return terms;
}

bool matches(const json& object, const std::vector<FieldTerm>& terms) {
  return std::ranges::all_of(terms, [&](const FieldTerm& term) {
    return (fieldOf(object, term.field) == term.value) == term.equal;
  });
}

}  // namespace

std::string FakeApiServer::keyOf(const std::string& collection, const json& object) {
  const json& metadata = object["metadata"];
  const std::string name = metadata.value("name", "");
  const bool namespaced =
      collection == "pods" || collection == kLeases || collection == kDaemonSets;
  return namespaced ? metadata.value("namespace", "default") + "/" + name : name;
}

void FakeApiServer::fail(httplib::Response& response, int code, const std::string& reason,
                         const std::string& message) {
  response.status = code;
  const json body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                     {"message", message}, {"reason", reason},   {"code", code}};
  response.set_content(body.dump(), "application/json");
}

FakeApiServer::FakeApiServer() {
  for (const std::string collection : {"nodes", "pods"}) {
    server_.Get("/api/v1/" + collection,
                [this, collection](const httplib::Request& request, httplib::Response& response) {
                  handleList(collection, request, response);
                });
  }
  server_.Get(R"(/api/v1/namespaces/([^/]+)/pods)",
              [this](const httplib::Request& request, httplib::Response& response) {
                handleList("pods", request, response, request.matches[1]);
              });
  server_.Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& request,
                                                                   httplib::Response& response) {
    if (injectedFailure(request, response)) return;
    const std::string key = std::string(request.matches[1]) + "/" + std::string(request.matches[2]);
    if (auto pod = get("pods", key)) {
      response.set_content(pod->dump(), "application/json");
    } else {
      fail(response, 404, "NotFound", "pods \"" + key + "\" not found");
    }
  });
  // pods/status: only the patch's status is applied, as the API server's status subresource does.
  server_.Patch(
      R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/status)",
      [this](const httplib::Request& request, httplib::Response& response) {
        handlePatch("pods", std::string(request.matches[1]) + "/" + std::string(request.matches[2]),
                    request, response, true);
      });
  server_.Patch(
      R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))",
      [this](const httplib::Request& request, httplib::Response& response) {
        handlePatch("pods", std::string(request.matches[1]) + "/" + std::string(request.matches[2]),
                    request, response);
      });
  server_.Get(R"(/api/v1/nodes/([^/]+))",
              [this](const httplib::Request& request, httplib::Response& response) {
                if (injectedFailure(request, response)) return;
                const std::string name = request.matches[1];
                if (auto node = get("nodes", name)) {
                  response.set_content(node->dump(), "application/json");
                } else {
                  fail(response, 404, "NotFound", "nodes \"" + name + "\" not found");
                }
              });
  server_.Patch(R"(/api/v1/nodes/([^/]+)/status)",
                [this](const httplib::Request& request, httplib::Response& response) {
                  handleStatusPatch(request.matches[1], request, response);
                });
  server_.Patch(R"(/api/v1/nodes/([^/]+))",
                [this](const httplib::Request& request, httplib::Response& response) {
                  handlePatch("nodes", request.matches[1], request, response);
                });
  server_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)",
               [this](const httplib::Request& request, httplib::Response& response) {
                 handleBinding(
                     std::string(request.matches[1]) + "/" + std::string(request.matches[2]),
                     request, response);
               });
  server_.Post(R"(/api/v1/namespaces/([^/]+)/events)",
               [this](const httplib::Request& request, httplib::Response& response) {
                 recordWrite(request);
                 if (injectedFailure(request, response)) return;
                 json event = json::parse(request.body, nullptr, false);
                 if (!event.is_object()) {
                   fail(response, 400, "BadRequest", "event body is not JSON");
                   return;
                 }
                 {
                   std::lock_guard lock(mutex_);
                   events_.push_back(event);
                 }
                 response.status = 201;
                 response.set_content(event.dump(), "application/json");
               });
  serveWrittenObjects();
  // As Go's net/http (the API server) does: without it each answer waits out the client's
  // delayed acknowledgement (40 ms) between its header and body writes.
  server_.set_tcp_nodelay(true);
  port_ = server_.bind_to_any_port("127.0.0.1");
  thread_ = std::jthread([this] { server_.listen_after_bind(); });
  while (!server_.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeApiServer::~FakeApiServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  server_.stop();
}

void FakeApiServer::writeKubeconfig(const std::string& path) const {
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
                      << "clusters:\n- name: fake\n  cluster:\n    server: " << url() << "\n"
                      << "users:\n- name: tester\n  user:\n    token: test-token\n"
                      << "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                      << "    user: tester\n";
}

void FakeApiServer::changeLocked(const std::string& collection, const std::string& type,
                                 json object) {
  ++version_;
  object["metadata"]["resourceVersion"] = std::to_string(version_);
  const std::string key = keyOf(collection, object);
  json previous;
  if (const auto stored = objects_[collection].find(key); stored != objects_[collection].end()) {
    previous = stored->second;
  }
  if (type == "DELETED") {
    if (previous.is_null()) previous = object;
    objects_[collection].erase(key);
  } else {
    objects_[collection][key] = object;
  }
  history_.push_back({version_, collection, type, std::move(object), std::move(previous)});
  changed_.notify_all();
}

void FakeApiServer::put(const std::string& collection, json object) {
  std::lock_guard lock(mutex_);
  json& metadata = object["metadata"];
  if (!metadata.contains("uid")) metadata["uid"] = "uid-" + std::to_string(++uids_);
  if ((collection == "pods" || collection == kLeases || collection == kDaemonSets) &&
      !metadata.contains("namespace")) {
    metadata["namespace"] = "default";
  }
  const bool exists = objects_[collection].count(keyOf(collection, object)) != 0;
  changeLocked(collection, exists ? "MODIFIED" : "ADDED", std::move(object));
}

void FakeApiServer::remove(const std::string& collection, const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto it = objects_[collection].find(key);
  if (it == objects_[collection].end()) return;
  changeLocked(collection, "DELETED", it->second);
}

void FakeApiServer::putSilently(const std::string& collection, json object) {
  std::lock_guard lock(mutex_);
  json& metadata = object["metadata"];
  if (!metadata.contains("uid")) metadata["uid"] = "uid-" + std::to_string(++uids_);
  if (collection == "pods" && !metadata.contains("namespace")) metadata["namespace"] = "default";
  ++version_;
  metadata["resourceVersion"] = std::to_string(version_);
  const std::string key = keyOf(collection, object);
  objects_[collection][key] = std::move(object);
}

void FakeApiServer::removeSilently(const std::string& collection, const std::string& key) {
  std::lock_guard lock(mutex_);
  objects_[collection].erase(key);
  ++version_;
}

std::optional<json> FakeApiServer::get(const std::string& collection,
                                       const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto found = objects_.find(collection);
  if (found == objects_.end()) return std::nullopt;
  const auto it = found->second.find(key);
  if (it == found->second.end()) return std::nullopt;
  return it->second;
}

void FakeApiServer::expireWatches() {
  std::lock_guard lock(mutex_);
  ++expiry_;
  compactedBefore_ = version_ + 1;
  history_.clear();
  changed_.notify_all();
}

void FakeApiServer::failNext(const std::string& method, const std::string& pathPart, int code) {
  std::lock_guard lock(mutex_);
  failures_.push_back({method, pathPart, code});
}

bool FakeApiServer::injectedFailure(const httplib::Request& request, httplib::Response& response) {
  std::lock_guard lock(mutex_);
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (it->method == request.method && request.path.find(it->pathPart) != std::string::npos) {
      const int code = it->status;
      failures_.erase(it);
      fail(response, code, "InternalError", "injected failure");
      return true;
    }
  }
  return false;
}

void FakeApiServer::recordWrite(const httplib::Request& request) {
  std::lock_guard lock(mutex_);
  writes_.push_back({request.method, request.path, request.get_header_value("Content-Type"),
                     json::parse(request.body, nullptr, false),
                     request.get_param_value("dryRun") == "All"});
}

std::vector<FakeApiServer::Write> FakeApiServer::writes() const {
  std::lock_guard lock(mutex_);
  return writes_;
}

std::vector<json> FakeApiServer::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

int FakeApiServer::lists(const std::string& collection) const {
  std::lock_guard lock(mutex_);
  const auto it = lists_.find(collection);
  return it == lists_.end() ? 0 : it->second;
}

int FakeApiServer::openWatches() const {
  std::lock_guard lock(mutex_);
  return openWatches_;
}

void FakeApiServer::handleList(const std::string& collection, const httplib::Request& request,
                               httplib::Response& response, const std::string& nameSpace) {
  if (injectedFailure(request, response)) return;
  auto selector = parseFieldSelector(request.get_param_value("fieldSelector"));
  if (const auto* refused = std::get_if<std::string>(&selector)) {
    fail(response, 400, "BadRequest", *refused);
    return;
  }
  std::vector<FieldTerm> terms = std::get<std::vector<FieldTerm>>(std::move(selector));
  // A namespaced list (/api/v1/namespaces/NS/pods) is the cluster's list of that namespace.
  if (!nameSpace.empty()) terms.push_back({"metadata.namespace", true, nameSpace});
  auto labels = parseLabelSelector(request.get_param_value("labelSelector"));
  if (const auto* refused = std::get_if<std::string>(&labels)) {
    fail(response, 400, "BadRequest", *refused);
    return;
  }
  const LabelSelector labelled = std::get<LabelSelector>(std::move(labels));
  if (request.get_param_value("watch") == "1") {
    std::uint64_t from = 0;
    try {
      from = std::stoull(request.get_param_value("resourceVersion"));
    } catch (const std::exception&) {
      fail(response, 400, "BadRequest", "resourceVersion must be a number");
      return;
    }
    handleWatch(
        collection, from,
        [terms, labelled](const json& object) {
          return matches(object, terms) && labelsMatch(object, labelled);
        },
        response);
    return;
  }
  std::lock_guard lock(mutex_);
  ++lists_[collection];
  json items = json::array();
  for (const auto& [key, object] : objects_[collection]) {
    if (matches(object, terms) && labelsMatch(object, labelled)) items.push_back(object);
  }
  const json list = {{"kind", collection == "pods"        ? "PodList"
                              : collection == "nodes"     ? "NodeList"
                              : collection == kDaemonSets ? "DaemonSetList"
                                                          : "ResourceSliceList"},
                     {"apiVersion", collection == kResourceSlices ? "resource.k8s.io/v1"
                                    : collection == kDaemonSets   ? "apps/v1"
                                                                  : "v1"},
                     {"metadata", {{"resourceVersion", std::to_string(version_)}}},
                     {"items", std::move(items)}};
  response.set_content(list.dump(), "application/json");
}

void FakeApiServer::handleWatch(const std::string& collection, std::uint64_t from,
                                std::function<bool(const json&)> selects,
                                httplib::Response& response) {
  std::uint64_t expiry = 0;
  {
    std::lock_guard lock(mutex_);
    expiry = expiry_;
    ++openWatches_;
  }
  const auto gone = [](std::uint64_t version) {
    const json event = {{"type", "ERROR"},
                        {"object",
                         {{"kind", "Status"},
                          {"apiVersion", "v1"},
                          {"status", "Failure"},
                          {"reason", "Expired"},
                          {"code", 410},
                          {"message", "too old resource version: " + std::to_string(version)}}}};
    return event.dump() + "\n";
  };
  response.set_chunked_content_provider(
      "application/json",
      [this, collection, selects = std::move(selects), cursor = from, expiry, gone](
          std::size_t, httplib::DataSink& sink) mutable {
        std::unique_lock lock(mutex_);
        if (cursor < compactedBefore_ - (compactedBefore_ > 0 ? 1 : 0) || expiry != expiry_) {
          const std::string line = gone(cursor);
          lock.unlock();
          sink.write(line.data(), line.size());
          sink.done();
          return true;
        }
        std::string lines;
        changed_.wait_for(lock, std::chrono::milliseconds(100), [&] {
          return stopping_ || expiry != expiry_ ||
                 (!history_.empty() && history_.back().version > cursor);
        });
        if (stopping_) {
          lock.unlock();
          sink.done();
          return true;
        }
        if (expiry != expiry_) return true;  // answered with 410 on the next call
        for (const Change& change : history_) {
          if (change.version <= cursor || change.collection != collection) continue;
          // As the API server's watch cache does: an object that stops matching the selector
          // arrives DELETED, as it was before the change; one that starts matching, ADDED.
          const bool nowMatches = change.type != "DELETED" && selects(change.object);
          const bool matchedBefore = !change.previous.is_null() && selects(change.previous);
          if (nowMatches) {
            lines += json{{"type", matchedBefore ? change.type : std::string("ADDED")},
                          {"object", change.object}}
                         .dump() +
                     "\n";
          } else if (matchedBefore) {
            json last = change.previous;
            last["metadata"]["resourceVersion"] = std::to_string(change.version);
            lines += json{{"type", "DELETED"}, {"object", std::move(last)}}.dump() + "\n";
          }
        }
        if (!history_.empty()) cursor = std::max(cursor, history_.back().version);
        lock.unlock();
        if (!lines.empty() && !sink.write(lines.data(), lines.size())) return false;
        return true;
      },
      [this](bool) {
        std::lock_guard lock(mutex_);
        --openWatches_;
      });
}

void FakeApiServer::handlePatch(const std::string& collection, const std::string& key,
                                const httplib::Request& request, httplib::Response& response,
                                bool statusOnly) {
  recordWrite(request);
  if (injectedFailure(request, response)) return;
  if (request.get_header_value("Content-Type") != "application/merge-patch+json") {
    fail(response, 415, "UnsupportedMediaType", "only application/merge-patch+json is served here");
    return;
  }
  json patch = json::parse(request.body, nullptr, false);
  if (!patch.is_object()) {
    fail(response, 400, "BadRequest", "patch body is not a JSON object");
    return;
  }
  std::lock_guard lock(mutex_);
  const auto it = objects_[collection].find(key);
  if (it == objects_[collection].end()) {
    fail(response, 404, "NotFound", collection + " \"" + key + "\" not found");
    return;
  }
  json object = it->second;
  if (patch.contains("metadata") && patch["metadata"].contains("uid")) {
    if (patch["metadata"]["uid"] != object["metadata"]["uid"]) {
      fail(response, 409, "Conflict",
           "Precondition failed: UID in precondition: " + patch["metadata"]["uid"].dump() +
               ", UID in object meta: " + object["metadata"]["uid"].dump());
      return;
    }
    patch["metadata"].erase("uid");
  }
  // A resourceVersion in the patch is a precondition, as the API server has it.
  if (patch.contains("metadata") && patch["metadata"].contains("resourceVersion")) {
    if (patch["metadata"]["resourceVersion"] != object["metadata"]["resourceVersion"]) {
      fail(response, 409, "Conflict",
           "Operation cannot be fulfilled on " + collection + " \"" + key +
               "\": the object has been modified; please apply your changes to the latest "
               "version and try again");
      return;
    }
    patch["metadata"].erase("resourceVersion");
  }
  if (statusOnly) {
    object.merge_patch(json{{"status", patch.value("status", json::object())}});
  } else {
    object.merge_patch(patch);
  }
  changeLocked(collection, "MODIFIED", object);
  response.set_content(objects_[collection][key].dump(), "application/json");
}

void FakeApiServer::handleStatusPatch(const std::string& node, const httplib::Request& request,
                                      httplib::Response& response) {
  recordWrite(request);
  if (injectedFailure(request, response)) return;
  if (request.get_header_value("Content-Type") != "application/strategic-merge-patch+json") {
    fail(response, 415, "UnsupportedMediaType",
         "node status is patched with application/strategic-merge-patch+json here");
    return;
  }
  json patch = json::parse(request.body, nullptr, false);
  if (!patch.is_object() || !patch.contains("status")) {
    fail(response, 400, "BadRequest", "expected a patch of status");
    return;
  }
  std::lock_guard lock(mutex_);
  const auto it = objects_["nodes"].find(node);
  if (it == objects_["nodes"].end()) {
    fail(response, 404, "NotFound", "nodes \"" + node + "\" not found");
    return;
  }
  json object = it->second;
  // Conditions merge by type, as the strategic merge patch of NodeStatus does.
  json& conditions = object["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  for (const json& condition : patch["status"].value("conditions", json::array())) {
    bool replaced = false;
    for (json& existing : conditions) {
      if (existing.value("type", "") == condition.value("type", "")) {
        existing.merge_patch(condition);
        replaced = true;
      }
    }
    if (!replaced) conditions.push_back(condition);
  }
  patch["status"].erase("conditions");
  object["status"].merge_patch(patch["status"]);
  changeLocked("nodes", "MODIFIED", object);
  response.set_content(objects_["nodes"][node].dump(), "application/json");
}

void FakeApiServer::handleBinding(const std::string& key, const httplib::Request& request,
                                  httplib::Response& response) {
  recordWrite(request);
  if (injectedFailure(request, response)) return;
  const json binding = json::parse(request.body, nullptr, false);
  if (!binding.is_object() || binding.value("kind", "") != "Binding" ||
      !binding.contains("target") || !binding["target"].contains("name")) {
    fail(response, 400, "BadRequest", "not a Binding");
    return;
  }
  std::lock_guard lock(mutex_);
  const auto it = objects_["pods"].find(key);
  if (it == objects_["pods"].end()) {
    fail(response, 404, "NotFound", "pods \"" + key + "\" not found");
    return;
  }
  json pod = it->second;
  if (binding["metadata"].contains("uid") && binding["metadata"]["uid"] != pod["metadata"]["uid"]) {
    fail(response, 409, "Conflict", "Precondition failed: UID mismatch");
    return;
  }
  if (pod["spec"].contains("nodeName")) {
    fail(response, 409, "Conflict",
         "pod " + key + " is already assigned to node " + pod["spec"]["nodeName"].dump());
    return;
  }
  pod["spec"]["nodeName"] = binding["target"]["name"];
  // As the API server does: the Binding's annotations are merged into the pod with its node.
  if (binding["metadata"].contains("annotations") &&
      binding["metadata"]["annotations"].is_object()) {
    for (const auto& [annotation, value] : binding["metadata"]["annotations"].items()) {
      pod["metadata"]["annotations"][annotation] = value;
    }
  }
  changeLocked("pods", "MODIFIED", pod);
  response.status = 201;
  response.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})",
                       "application/json");
}

json makeNode(const std::string& name, const std::string& instanceType) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name}, {"labels", {{"node.kubernetes.io/instance-type", instanceType}}}}},
          {"spec", json::object()},
          {"status", {{"phase", "Running"}}}};
}

json makePod(const std::string& ns, const std::string& name, const std::string& resource,
             int count) {
  const json resources = {{resource, std::to_string(count)}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name}, {"namespace", ns}, {"annotations", {{"example.com/owner", "team-a"}}}}},
          {"spec",
           {{"schedulerName", "neuron-scheduler"},
            {"containers",
             json::array({{{"name", "main"},
                           {"image", "train:latest"},
                           {"resources", {{"requests", resources}, {"limits", resources}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

}  // namespace torus::testing
