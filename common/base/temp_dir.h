// TempDir: a directory created under a base directory and removed with everything in it when
// the owner goes away.
#pragma once

#include <filesystem>
#include <string_view>

#include "common/base/result.h"

namespace torus {

class TempDir {
 public:
  // Under `base` when given, else under $TMPDIR, else /tmp.
  static Result<TempDir> create(std::string_view prefix, const std::filesystem::path& base = {});
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  void removeAll();
  std::filesystem::path path_;
};

}  // namespace torus
