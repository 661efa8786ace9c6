#include "common/base/file_io.h"

#include <cerrno>
#include <cstring>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

namespace torus {
namespace {

ErrorCode codeForErrno(int error) {
  switch (error) {
    case ENOENT:
    case ENOTDIR:
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
      return ErrorCode::kPermissionDenied;
    case EBUSY:
    case EAGAIN:
    case EINTR:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

std::string errnoText(int error) {
  return std::string(std::strerror(error)) + " (errno " + std::to_string(error) + ")";
}

Result<std::string> readSmallFile(const std::filesystem::path& path, std::size_t limit) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int error = errno;
    return makeError(codeForErrno(error), path.string() + ": cannot open: " + errnoText(error));
  }
  std::string contents;
  char buffer[4096];
  while (true) {
    const ssize_t count = ::read(fd.get(), buffer, sizeof(buffer));
    if (count < 0) {
      const int error = errno;
      if (error == EINTR) continue;
      return makeError(codeForErrno(error), path.string() + ": cannot read: " + errnoText(error));
    }
    if (count == 0) break;
    if (contents.size() + static_cast<std::size_t>(count) > limit) {
      return makeError(ErrorCode::kInvalidArgument,
                       path.string() + ": longer than " + std::to_string(limit) + " bytes");
    }
    contents.append(buffer, static_cast<std::size_t>(count));
  }
  return contents;
}

Result<void> writeFile(const std::filesystem::path& path, std::string_view contents,
                       CreateParents createParents) {
  std::error_code ec;
  if (createParents == CreateParents::kYes && path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
  }
  if (ec) {
    return makeError(ErrorCode::kInternal,
                     path.parent_path().string() + ": cannot create directory: " + ec.message());
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) {
    const int error = errno;
    return makeError(codeForErrno(error),
                     path.string() + ": cannot open for writing: " + errnoText(error));
  }
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t count = ::write(fd.get(), contents.data() + written, contents.size() - written);
    if (count < 0) {
      const int error = errno;
      if (error == EINTR) continue;
      return makeError(codeForErrno(error), path.string() + ": cannot write: " + errnoText(error));
    }
    written += static_cast<std::size_t>(count);
  }
  return okResult();
}

Result<void> writeFileAtomically(const std::filesystem::path& path, std::string_view contents,
                                 Durability durability) {
  const std::filesystem::path temporary = path.string() + ".tmp-" + std::to_string(::getpid());
  TORUS_RETURN_IF_ERROR(writeFile(temporary, contents), "writing " + path.string());
  if (durability == Durability::kSynced) {
    UniqueFd fd(::open(temporary.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0) {
      const int error = errno;
      ::unlink(temporary.c_str());
      return makeError(codeForErrno(error),
                       temporary.string() + ": cannot sync: " + errnoText(error));
    }
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    return makeError(codeForErrno(error), path.string() + ": cannot rename " +
                                              temporary.filename().string() +
                                              " over it: " + errnoText(error));
  }
  if (durability != Durability::kSynced) return okResult();
  // The rename is durable only once the directory entry is.
  const std::filesystem::path directory =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  UniqueFd dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) ::fsync(dir.get());
  return okResult();
}

bool writeFully(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace torus
