// TarArchive: builds a POSIX ustar archive in memory (what `tar xf` and every archive tool read),
// for bundles a CLI writes in one go. Regular files and directories only, mode 0644/0755, owner
// root, one modification time for all.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace torus {

class TarArchive {
 public:
  explicit TarArchive(std::chrono::system_clock::time_point modified);

  // `path` is relative, '/'-separated, without "." or ".." parts; up to 255 bytes (a ustar
  // prefix of 155 and name of 100, split at a '/'). Errors name the path and what is wrong.
  Result<void> addFile(std::string_view path, std::string_view content);
  Result<void> addDirectory(std::string_view path);

  // The archive with its end-of-archive blocks; the builder can be used no further.
  std::string finish() &&;

 private:
  Result<void> addEntry(std::string_view path, char type, std::string_view content);

  std::int64_t modified_;
  std::string data_;
};

}  // namespace torus
