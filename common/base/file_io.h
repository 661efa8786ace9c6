// Reading and writing small files (sysfs attributes, config files) with errors that name the path.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus {

// Reads at most `limit` bytes; a longer file is an error rather than a silent truncation, because
// a sysfs attribute is never that long and a config file that big is a mistake.
Result<std::string> readSmallFile(const std::filesystem::path& path, std::size_t limit = 64 * 1024);

enum class CreateParents { kYes, kNo };

// Writes `contents` to `path` (created or truncated), creating parent directories unless the
// caller knows they exist (the simulator writes thousands of files into a few directories).
Result<void> writeFile(const std::filesystem::path& path, std::string_view contents,
                       CreateParents createParents = CreateParents::kYes);

enum class Durability {
  kSynced,      // on disk before the call returns: survives a power cut (checkpoints)
  kAtomicOnly,  // readers never see a torn file, but a crash may lose it (files rebuilt at start)
};

// Replaces `path` with `contents` so that a reader at any moment sees either the old file or the
// new one, never a torn mix: writes a sibling temporary and renames it over `path`; kSynced also
// syncs the file before the rename and the directory after it.
Result<void> writeFileAtomically(const std::filesystem::path& path, std::string_view contents,
                                 Durability durability = Durability::kSynced);

// Errno text for messages: "No such file or directory (errno 2)".
std::string errnoText(int error);

// Writes all of `text` to `fd`, retrying short writes and EINTR; false once a write fails (the
// error is in errno).
bool writeFully(int fd, std::string_view text);

}  // namespace torus
