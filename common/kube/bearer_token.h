// BearerToken: the token a KubeClient sends, re-read from its file when the file changes.
//
// Service-account tokens are projected files that the kubelet rotates (EKS: every hour, and the
// API server stops accepting old ones after 90 days); a kubeconfig's `tokenFile` is rotated the
// same way. Reading the token once means every call fails with 401 after the first rotation, so
// the file is stat'ed on each use (a few microseconds) and re-read when its size, modification
// time or inode changed, and re-read unconditionally after a 401. Copies share one source.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "common/base/result.h"

namespace torus::kube {

class BearerToken {
 public:
  BearerToken() = default;  // no token
  static BearerToken fixed(std::string token);
  // Reads `path` now (an error if it cannot) and again whenever it changes.
  static Result<BearerToken> fromFile(std::filesystem::path path);

  bool empty() const;
  // The current token; after a failed re-read the last good one (with a warning logged once).
  std::string current() const;
  // Re-reads the file even if it looks unchanged: after the server answered 401.
  void invalidate() const;
  const std::filesystem::path& file() const;

 private:
  struct Source;
  std::shared_ptr<Source> source_;
};

}  // namespace torus::kube
