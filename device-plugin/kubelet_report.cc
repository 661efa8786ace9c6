#include "device-plugin/kubelet_report.h"

#include <string>

namespace torus::plugin {

KubeletReport::KubeletReport(std::vector<ResourceKind> kinds) {
  for (const ResourceKind kind : kinds)
    streams_[kind];
}

void KubeletReport::streamOpened(ResourceKind kind) {
  std::lock_guard lock(mutex_);
  Stream& stream = streams_[kind];
  if (stream.open++ == 0) stream.listed = false;
}

void KubeletReport::sent(ResourceKind kind, const topology::CoreSet& advertised,
                         const topology::CoreSet& unhealthy) {
  {
    std::lock_guard lock(mutex_);
    Stream& stream = streams_[kind];
    const bool same =
        stream.listed && stream.advertised == advertised && stream.unhealthy == unhealthy;
    stream.listed = true;
    stream.advertised = advertised;
    stream.unhealthy = unhealthy;
    stream.everListed = true;
    if (same) return;
  }
  notifier_.notify();
}

void KubeletReport::streamClosed(ResourceKind kind) {
  {
    std::lock_guard lock(mutex_);
    Stream& stream = streams_[kind];
    if (stream.open > 0) --stream.open;
    if (stream.open > 0) return;
    stream.listed = false;
    stream.unhealthy = stream.advertised;
  }
  notifier_.notify();
}

std::optional<contracts::KubeletUnavailable> KubeletReport::current() const {
  std::lock_guard lock(mutex_);
  contracts::KubeletUnavailable report;
  for (const auto& [kind, stream] : streams_) {
    if (!stream.everListed) return std::nullopt;
    report[std::string(resourceName(kind))] = stream.unhealthy;
  }
  return report;
}

bool KubeletReport::serving() const {
  std::lock_guard lock(mutex_);
  for (const auto& [kind, stream] : streams_) {
    if (stream.open == 0 || !stream.listed) return false;
  }
  return true;
}

}  // namespace torus::plugin
