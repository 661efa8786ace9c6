// The small text formats every component reads: core-id sets ("0-3,8"), Kubernetes quantities,
// durations, sysfs attributes and the logical_nc_config file. Parsing never crashes, and what
// parses round-trips or stays in its documented range.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/base/parse.h"
#include "common/kube/quantity.h"
#include "common/topology/core_set.h"
#include "node-runtime/discovery/lnc_config.h"
#include "node-runtime/discovery/sysfs_attribute.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto ids = topology::CoreSet::parse(text)) {
    auto ranges = topology::CoreSet::parse(ids->toRangeString());
    auto list = topology::CoreSet::parse(ids->toListString());
    if (!ranges || !list || *ranges != *ids || *list != *ids) std::abort();
  }
  if (auto count = kube::wholeQuantity(text, 0, 4096); count && (*count < 0 || *count > 4096)) {
    std::abort();
  }
  if (auto millis = parseDurationMillis(text);
      millis && (*millis < 0 || *millis > kMaxDurationMillis)) {
    std::abort();
  }
  if (auto lnc = discovery::parseLncConfigFile(text); lnc && *lnc != 1 && *lnc != 2) std::abort();
  (void)discovery::parseCoreCount(text);
  (void)discovery::parseConnectedDevices(text);
  (void)discovery::parseCounter(text);
  (void)discovery::parseSerialNumber(text);
  (void)discovery::parseResetState(text);
  (void)discovery::parseUltraServerNodeId(text);
  (void)discovery::parseUltraServerId(text);
  (void)discovery::parseUltraServerModes(text);
  (void)discovery::parseName(text);
  return 0;
}
