#include "common/kube/bearer_token.h"

#include <sys/stat.h>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/strings.h"

namespace torus::kube {
namespace {

constexpr std::size_t kMaxTokenBytes = 64 * 1024;

struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  timespec modified{};

  bool operator==(const FileStamp& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified.tv_sec == other.modified.tv_sec && modified.tv_nsec == other.modified.tv_nsec;
  }
};

// stat() follows the symlink the kubelet swaps on rotation (..data -> ..2026_11_24...).
FileStamp stampOf(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return {};
  return {info.st_dev, info.st_ino, info.st_size, info.st_mtim};
}

}  // namespace

struct BearerToken::Source {
  std::filesystem::path path;  // empty: a fixed token
  mutable std::mutex mutex;
  mutable std::string token;
  mutable FileStamp stamp;
  mutable bool warned = false;

  Result<void> reload() const {
    const FileStamp now = stampOf(path);
    auto text = readSmallFile(path, kMaxTokenBytes);
    if (!text) return std::move(text).error().withContext("bearer token");
    const std::string fresh(trim(*text));
    if (fresh.empty()) {
      return makeError(ErrorCode::kInvalidArgument, "bearer token " + path.string() + " is empty");
    }
    token = fresh;
    stamp = now;
    warned = false;
    return okResult();
  }

  void reloadKeepingLast() const {
    if (auto reloaded = reload(); !reloaded && !warned) {
      warned = true;
      TORUS_LOG(Warn, Kube, "cannot re-read the API token; using the previous one",
                {"error", reloaded.error().message});
    }
  }
};

BearerToken BearerToken::fixed(std::string token) {
  BearerToken result;
  result.source_ = std::make_shared<Source>();
  result.source_->token = std::move(token);
  return result;
}

Result<BearerToken> BearerToken::fromFile(std::filesystem::path path) {
  BearerToken result;
  result.source_ = std::make_shared<Source>();
  result.source_->path = std::move(path);
  if (auto loaded = result.source_->reload(); !loaded) return std::move(loaded).error();
  return result;
}

bool BearerToken::empty() const {
  return !source_ || (source_->path.empty() && source_->token.empty());
}

std::string BearerToken::current() const {
  if (!source_) return {};
  std::lock_guard lock(source_->mutex);
  if (!source_->path.empty() && !(stampOf(source_->path) == source_->stamp)) {
    source_->reloadKeepingLast();
  }
  return source_->token;
}

void BearerToken::invalidate() const {
  if (!source_ || source_->path.empty()) return;
  std::lock_guard lock(source_->mutex);
  source_->reloadKeepingLast();
}

const std::filesystem::path& BearerToken::file() const {
  static const std::filesystem::path kNone;
  return source_ ? source_->path : kNone;
}

}  // namespace torus::kube
