#include "common/base/temp_dir.h"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <system_error>
#include <vector>

#include "common/base/file_io.h"

namespace torus {

Result<TempDir> TempDir::create(std::string_view prefix, const std::filesystem::path& base) {
  std::string directory = base.string();
  if (directory.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    directory = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  std::string pattern = directory + "/" + std::string(prefix) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    const int error = errno;
    return makeError(ErrorCode::kInternal,
                     "cannot create a temporary directory " + pattern + ": " + errnoText(error));
  }
  return TempDir(std::filesystem::path(buffer.data()));
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    removeAll();
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  removeAll();
}

void TempDir::removeAll() {
  if (path_.empty()) return;
  std::error_code ignored;  // nothing useful to do if cleanup fails during teardown
  std::filesystem::remove_all(path_, ignored);
  path_.clear();
}

}  // namespace torus
