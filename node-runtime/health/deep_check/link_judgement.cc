#include "node-runtime/health/deep_check/link_judgement.h"

#include <algorithm>
#include <cstdio>
#include <system_error>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/neuronlink_attributes.h"

namespace torus::health {
namespace {

namespace fs = std::filesystem;

std::string oneDecimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", value);
  return buffer;
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

std::vector<std::string> judgeLinks(std::span<const LinkObservation> links) {
  std::vector<std::string> problems(links.size());
  for (std::size_t i = 0; i < links.size(); ++i) {
    const LinkObservation& link = links[i];
    const std::string name = linkName(link.a, link.b);
    if (!link.up) {
      problems[i] = name + " is down: neuron" + std::to_string(link.a) + " and neuron" +
                    std::to_string(link.b) + " no longer list each other in connected_devices";
    } else if (!link.error.empty()) {
      problems[i] = name + ": " + link.error;
    } else if (link.speed && link.speed->current < link.speed->max) {
      problems[i] = name + " is slow: trained at " + oneDecimal(link.speed->current) + " of " +
                    oneDecimal(link.speed->max) + " GT/s (" + link.speed->file + ")";
    }
  }
  return problems;
}

}  // namespace torus::health
