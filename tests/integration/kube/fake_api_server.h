// A stand-in for the Kubernetes API server, over real HTTP on loopback, speaking its wire format
// for what Torus uses: list and watch of nodes and pods (resourceVersions, bookmarks-free event
// streams, 410 Gone for a compacted history, fieldSelector on metadata.name/namespace,
// spec.nodeName and status.phase with =, == and !=; a watched object leaving the selection arrives
// DELETED), GET of one object, JSON merge-patch (with the UID and resourceVersion preconditions;
// of pods/status too), pods/binding and events; ResourceSlices (resource.k8s.io/v1: list and
// watch by spec.nodeName and spec.driver, create with generateName and ?dryRun=All, replace with
// the resourceVersion precondition, delete), which can drop the fields of a switched-off feature
// as an older API server does; Leases (coordination.k8s.io/v1: get, create, replace with the
// resourceVersion precondition, delete); and GET and namespaced list of DaemonSets (apps/v1).
// Lists take ?labelSelector= as the API server does. Tests change objects
// through it, inject failures, and read back every write the client made.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace torus::testing {

class FakeApiServer {
 public:
  FakeApiServer();
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A kubeconfig (token auth) pointing here, written to `path`.
  void writeKubeconfig(const std::string& path) const;

  // collection: "nodes", "pods", "resourceslices" (kResourceSlices), "leases" (kLeases) or
  // "daemonsets" (kDaemonSets). Adds or
  // replaces the object (a UID and a resourceVersion are assigned) and tells the watchers.
  void put(const std::string& collection, nlohmann::json object);
  void remove(const std::string& collection, const std::string& key);
  // Stores without telling the watchers: a watch that lags behind the API (a list sees it).
  void putSilently(const std::string& collection, nlohmann::json object);
  // Removes without telling the watchers: a missed event, healed only by a re-list.
  void removeSilently(const std::string& collection, const std::string& key);
  // Key: "namespace/name" for pods and leases, "name" for nodes and slices.
  std::optional<nlohmann::json> get(const std::string& collection, const std::string& key) const;
  // Ends every open watch with 410 Gone and forgets the history: clients must list again.
  void expireWatches();
  // The next request whose method matches and whose path contains `pathPart` gets `status`.
  void failNext(const std::string& method, const std::string& pathPart, int status);

  // As an API server with DRAPartitionableDevices (counters) or DRADeviceTaints (taints) off:
  // ResourceSlices are stored, and dry runs answered, without those fields.
  void dropSliceFields(bool counters, bool taints);

  struct Write {
    std::string method;
    std::string path;
    std::string contentType;
    nlohmann::json body;
    bool dryRun = false;  // ?dryRun=All: answered, not stored
  };
  std::vector<Write> writes() const;
  std::vector<nlohmann::json> events() const;
  int lists(const std::string& collection) const;
  int openWatches() const;

 private:
  struct Change {
    std::uint64_t version;
    std::string collection;
    std::string type;
    nlohmann::json object;
    nlohmann::json previous;  // the object before the change; null when it is new
  };

  // nameSpace: a namespaced list's namespace; "" lists the whole cluster.
  void handleList(const std::string& collection, const httplib::Request& request,
                  httplib::Response& response, const std::string& nameSpace = "");
  void handleWatch(const std::string& collection, std::uint64_t from,
                   std::function<bool(const nlohmann::json&)> selects, httplib::Response& response);
  // statusOnly: pods/status, where only the patch's status is applied.
  void handlePatch(const std::string& collection, const std::string& key,
                   const httplib::Request& request, httplib::Response& response,
                   bool statusOnly = false);
  void handleStatusPatch(const std::string& node, const httplib::Request& request,
                         httplib::Response& response);
  void handleBinding(const std::string& key, const httplib::Request& request,
                     httplib::Response& response);
  // fake_api_server_objects.cc: the ResourceSlice and Lease routes.
  void serveWrittenObjects();
  // POST to `path`, PUT and DELETE of `path`/NAME (`group`: the API group, for messages).
  void serveWholeObjectWrites(const std::string& collection, const std::string& path,
                              const std::string& group);
  // An object as this server would store it (a slice's dropped fields removed); mutex_ held.
  nlohmann::json asStoredLocked(const std::string& collection, nlohmann::json object) const;
  static std::string keyOf(const std::string& collection, const nlohmann::json& object);
  static void fail(httplib::Response& response, int code, const std::string& reason,
                   const std::string& message);
  bool injectedFailure(const httplib::Request& request, httplib::Response& response);
  void recordWrite(const httplib::Request& request);
  // With mutex_ held.
  void changeLocked(const std::string& collection, const std::string& type, nlohmann::json object);

  httplib::Server server_;
  int port_ = 0;
  std::jthread thread_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::uint64_t version_ = 100;
  std::uint64_t compactedBefore_ = 0;  // watches from an older version get 410
  std::uint64_t expiry_ = 0;           // bumped by expireWatches()
  std::uint64_t uids_ = 0;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;
  std::vector<Change> history_;
  std::vector<Write> writes_;
  std::vector<nlohmann::json> events_;
  std::map<std::string, int> lists_;
  int openWatches_ = 0;
  struct Failure {
    std::string method;
    std::string pathPart;
    int status;
  };
  std::vector<Failure> failures_;
  bool dropCounters_ = false;  // (mutex_)
  bool dropTaints_ = false;    // (mutex_)
  std::uint64_t generatedNames_ = 0;
};

inline constexpr const char* kResourceSlices = "resourceslices";
inline constexpr const char* kLeases = "leases";
inline constexpr const char* kDaemonSets = "daemonsets";  // apps/v1: get and list

// Minimal objects as the API server returns them.
nlohmann::json makeNode(const std::string& name, const std::string& instanceType);
// A pod asking `count` of `resource` ("aws.amazon.com/neuroncore" or "aws.amazon.com/neuron").
nlohmann::json makePod(const std::string& ns, const std::string& name, const std::string& resource,
                       int count);

}  // namespace torus::testing
