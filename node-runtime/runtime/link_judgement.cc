#include "node-runtime/runtime/link_judgement.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/neuronlink_attributes.h"

namespace torus::runtime {
namespace {

namespace fs = std::filesystem;

std::string milliseconds(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f ms", seconds * 1000);
  return buffer;
}

std::string oneDecimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

Result<double> readSpeedFile(const fs::path& path) {
  auto text = readSmallFile(path);
  if (!text) return std::move(text).error();
  auto speed = parseLinkSpeed(*text);
  if (!speed) return std::move(speed).error().withContext(path.string());
  return speed;
}

}  // namespace

std::string linkName(int a, int b) {
  return "NeuronLink " + std::to_string(std::min(a, b)) + "-" + std::to_string(std::max(a, b));
}

Result<double> parseLinkSpeed(std::string_view text) {
  const std::string trimmed(trim(text));
  double value = 0;
  char unit[8] = {};
  int consumed = 0;
  if (std::sscanf(trimmed.c_str(), "%lf %7s%n", &value, unit, &consumed) != 2 ||
      std::string_view(unit) != "GT/s" || static_cast<std::size_t>(consumed) != trimmed.size() ||
      !(value > 0)) {
    return makeError(ErrorCode::kInvalidArgument,
                     "expected a link speed such as \"32.0 GT/s\", got " + quoteJsonString(text));
  }
  return value;
}

Result<std::optional<LinkSpeed>> readLinkSpeed(const discovery::DiscoveryRoots& roots, int device,
                                               int peer) {
  const fs::path dir =
      discovery::neuronLinkDir(roots.neuronClass() / ("neuron" + std::to_string(device)), peer);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::optional<LinkSpeed>();
  LinkSpeed speed;
  speed.file = (dir / discovery::kCurrentLinkSpeed).string();
  auto current = readSpeedFile(dir / discovery::kCurrentLinkSpeed);
  if (!current) return std::move(current).error();
  auto max = readSpeedFile(dir / discovery::kMaxLinkSpeed);
  if (!max) return std::move(max).error();
  speed.current = *current;
  speed.max = *max;
  return std::optional<LinkSpeed>(std::move(speed));
}

std::vector<std::string> judgeLinks(std::span<const LinkObservation> links,
                                    const SlowLinkPolicy& policy) {
  std::vector<std::string> problems(links.size());
  const double floor = std::chrono::duration<double>(policy.minimumExcess).count();
  for (std::size_t i = 0; i < links.size(); ++i) {
    const LinkObservation& link = links[i];
    const std::string name = linkName(link.a, link.b);
    if (!link.up) {
      problems[i] = name + " is down: neuron" + std::to_string(link.a) + " and neuron" +
                    std::to_string(link.b) + " no longer list each other in connected_devices";
      continue;
    }
    if (!link.error.empty()) {
      problems[i] = name + ": " + link.error;
      continue;
    }
    if (link.speed && link.speed->current < link.speed->max) {
      problems[i] = name + " is slow: trained at " + oneDecimal(link.speed->current) + " of " +
                    oneDecimal(link.speed->max) + " GT/s (" + link.speed->file + ")";
      continue;
    }
    if (!link.seconds) continue;
    std::vector<double> others;
    for (std::size_t j = 0; j < links.size(); ++j) {
      if (j != i && links[j].seconds) others.push_back(*links[j].seconds);
    }
    // With fewer than two other links there is no baseline to call this one slow against.
    if (others.size() < 2) continue;
    const double baseline = median(std::move(others));
    if (*link.seconds > policy.factor * baseline && *link.seconds - baseline >= floor) {
      problems[i] = name + " is slow: " + milliseconds(*link.seconds) + " per transfer, " +
                    oneDecimal(*link.seconds / baseline) + "x the median of the other links (" +
                    milliseconds(baseline) + ")";
    }
  }
  return problems;
}

}  // namespace torus::runtime
