// Writes the files of a simulated tree, counting them for the log and creating each directory
// once (a trn2.48xlarge tree is ~13,000 files in a few thousand directories).
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include "common/base/file_io.h"
#include "common/base/result.h"

namespace torus::simulator {

class TreeWriter {
 public:
  explicit TreeWriter(int& files) : files_(files) {}

  Result<void> file(const std::filesystem::path& path, std::string_view contents) {
    ++files_;
    const std::filesystem::path parent = path.parent_path();
    if (createdDirectories_.insert(parent.string()).second) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
      if (ec) return makeError(ErrorCode::kInternal, parent.string() + ": " + ec.message());
    }
    return writeFile(path, contents, CreateParents::kNo);
  }
  // Counter files that read 0, as the driver's do before anything has happened.
  Result<void> counters(const std::filesystem::path& dir,
                        std::initializer_list<const char*> names) {
    for (const char* name : names)
      TORUS_RETURN_IF_ERROR(file(dir / name, "0\n"), "simulator");
    return okResult();
  }

 private:
  int& files_;
  std::unordered_set<std::string> createdDirectories_;
};

}  // namespace torus::simulator
