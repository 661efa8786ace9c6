#include "node-runtime/discovery/ultraserver.h"

#include <system_error>

#include "common/base/strings.h"
#include "node-runtime/discovery/sysfs_attribute.h"

namespace torus::discovery {

UltraServerReading readUltraServer(const DiscoveryRoots& roots) {
  UltraServerReading reading;
  const auto dir = roots.neuronClass();
  std::error_code ec;
  // Drivers older than UltraServer support have none of these files.
  if (!std::filesystem::exists(dir / "node_id_4", ec)) return reading;

  topology::UltraServerPosition position;
  bool busy = false;
  const auto readNodeId = [&](const char* name, int& out) {
    auto text = readAttribute(dir / name);
    if (text && trim(*text) == "busy") {
      busy = true;
      return;
    }
    auto value = readParsed(dir / name, name, parseUltraServerNodeId);
    if (value) {
      out = *value;
    } else {
      reading.problems.push_back(value.error().message);
    }
  };
  const auto readServerId = [&](const char* name, std::string& out) {
    auto value = readParsed(dir / name, name, parseUltraServerId);
    if (value) {
      out = std::move(*value);
    } else {
      reading.problems.push_back(value.error().message);
    }
  };
  readNodeId("node_id_2", position.nodeId2);
  readNodeId("node_id_4", position.nodeId4);
  readServerId("server_id_2", position.serverId2);
  readServerId("server_id_4", position.serverId4);
  auto modesText = readAttribute(dir / "ultraserver_mode");
  if (modesText && trim(*modesText) == "busy") {
    busy = true;
  } else if (auto modes =
                 readParsed(dir / "ultraserver_mode", "ultraserver_mode", parseUltraServerModes)) {
    position.supportedModes = std::move(*modes);
  } else {
    reading.problems.push_back(modes.error().message);
  }
  if (busy) {
    reading.problems.push_back(
        "UltraServer election in progress (driver reports \"busy\"); position unknown for now");
    return reading;
  }
  if (position.nodeId4 >= 0 || position.nodeId2 >= 0 || !position.serverId4.empty()) {
    reading.position = std::move(position);
  }
  return reading;
}

}  // namespace torus::discovery
