// The /dev/neuronN nodes of a simulated tree: character devices with a major no driver on this
// machine registered, so that a wrong device grant fails in tests as it does on a real node; a
// regular file stands in where mknod is not allowed (no CAP_MKNOD, or not asked for).
#pragma once

#include <filesystem>

namespace torus::simulator {

// Makes `path` a character device of minor `index`; false (nothing made) when
// `tryCharacterDevice` is false or the node cannot be made, and the caller writes a file instead.
bool makeDeviceNode(const std::filesystem::path& path, int index, bool tryCharacterDevice);

}  // namespace torus::simulator
