// gRPC target for a unix socket path. "unix://relative/path" would read "relative" as an
// authority, so every path is made absolute and written as "unix:/abs/path".
#pragma once

#include <filesystem>
#include <string>

namespace torus::kubelet {

inline std::string unixAddress(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return "unix:" + (ec ? path : absolute.string());
}

}  // namespace torus::kubelet
