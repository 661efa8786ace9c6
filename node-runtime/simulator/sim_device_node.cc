#include "node-runtime/simulator/sim_device_node.h"

#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::simulator {
namespace {

// A character-device major Linux reserves for local use (Documentation/admin-guide/devices.txt:
// 60-63, 120-127, 240-254) that no driver on this machine has registered (/proc/devices lists
// those). A node with it has no driver behind it: opening it answers ENXIO where the container's
// device rules let it through and EPERM where they do not, as a real /dev/neuronN the runtime did
// not grant does. (Copying /dev/null's numbers, which every container may open, hid a wrong grant.)
std::optional<unsigned> unclaimedLocalMajor() {
  std::unordered_set<unsigned> claimed;
  if (auto devices = readSmallFile("/proc/devices", 64 * 1024)) {
    bool character = false;
    for (const std::string_view line : splitAndTrim(*devices, '\n')) {
      if (line.starts_with("Character")) character = true;
      if (line.starts_with("Block")) character = false;
      // "  1 mem": the major, then the driver's name.
      if (auto major = parseInt(line.substr(0, line.find(' ')), 0, 4095); character && major) {
        claimed.insert(static_cast<unsigned>(*major));
      }
    }
  }
  for (const auto& [first, last] : {std::pair{60U, 63U}, {120U, 127U}, {240U, 254U}}) {
    for (unsigned major = first; major <= last; ++major) {
      if (!claimed.contains(major)) return major;
    }
  }
  return std::nullopt;
}

}  // namespace

bool makeDeviceNode(const std::filesystem::path& path, int index, bool tryCharacterDevice) {
  if (!tryCharacterDevice) return false;
  static const std::optional<unsigned> major = unclaimedLocalMajor();
  return major &&
         ::mknod(path.c_str(), S_IFCHR | 0666, makedev(*major, static_cast<unsigned>(index))) == 0;
}

}  // namespace torus::simulator
