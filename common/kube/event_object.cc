#include "common/kube/event_object.h"

#include <nlohmann/json.hpp>

#include "common/base/utc_time.h"

namespace torus::kube {

nlohmann::json eventObject(const EventSubject& subject, const std::string& eventNamespace,
                           bool normal, const std::string& reason, const std::string& message,
                           const std::string& component, const std::string& host) {
  const std::string now = utcNowRfc3339();
  nlohmann::json involved = {
      {"apiVersion", "v1"}, {"kind", subject.kind}, {"name", subject.name}, {"uid", subject.uid}};
  if (!subject.namespace_.empty()) involved["namespace"] = subject.namespace_;
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", subject.name + "."}, {"namespace", eventNamespace}}},
      {"involvedObject", std::move(involved)},
      {"reason", reason},
      {"message", message},
      {"type", normal ? "Normal" : "Warning"},
      {"source", {{"component", component}}},
      {"reportingComponent", component},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1}};
  if (!host.empty()) {
    event["source"]["host"] = host;
    event["reportingInstance"] = host;
  }
  return event;
}

}  // namespace torus::kube
