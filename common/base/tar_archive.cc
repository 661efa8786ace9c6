#include "common/base/tar_archive.h"

#include <algorithm>
#include <cstring>

namespace torus {
namespace {

constexpr std::size_t kBlock = 512;

// An octal field of `width` bytes: width - 1 digits, zero-padded, then NUL.
void putOctal(char* field, std::size_t width, std::uint64_t value) {
  field[width - 1] = '\0';
  for (std::size_t i = width - 1; i-- > 0; value >>= 3)
    field[i] = static_cast<char>('0' + (value & 7));
}

Result<void> checkPath(std::string_view path) {
  const auto bad = [&](const std::string& why) {
    return makeError(ErrorCode::kInvalidArgument,
                     "archive path \"" + std::string(path) + "\": " + why);
  };
  if (path.empty()) return bad("empty");
  if (path.front() == '/') return bad("absolute");
  if (path.find('\0') != std::string_view::npos) return bad("contains NUL");
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return bad("has an empty, . or .. part");
    start = end + 1;
  }
  return okResult();
}

}  // namespace

TarArchive::TarArchive(std::chrono::system_clock::time_point modified)
    : modified_(
          std::chrono::duration_cast<std::chrono::seconds>(modified.time_since_epoch()).count()) {}

Result<void> TarArchive::addFile(std::string_view path, std::string_view content) {
  return addEntry(path, '0', content);
}

Result<void> TarArchive::addDirectory(std::string_view path) {
  return addEntry(path, '5', {});
}

Result<void> TarArchive::addEntry(std::string_view path, char type, std::string_view content) {
  if (auto valid = checkPath(path); !valid) return valid;
  std::string name(path);
  if (type == '5') name += '/';
  // ustar: a name of up to 100 bytes, or a prefix (up to 155) and a name split at a '/'.
  std::string_view prefix;
  std::string_view base = name;
  if (name.size() > 100) {
    const std::size_t split = name.rfind('/', std::min<std::size_t>(155, name.size() - 2));
    if (split == std::string::npos || name.size() - split - 1 > 100 || split > 155) {
      return makeError(ErrorCode::kInvalidArgument,
                       "archive path \"" + std::string(path) + "\": too long for ustar");
    }
    prefix = std::string_view(name).substr(0, split);
    base = std::string_view(name).substr(split + 1);
  }
  char header[kBlock] = {};
  std::memcpy(header, base.data(), base.size());
  putOctal(header + 100, 8, type == '5' ? 0755 : 0644);
  putOctal(header + 108, 8, 0);  // uid
  putOctal(header + 116, 8, 0);  // gid
  putOctal(header + 124, 12, type == '5' ? 0 : content.size());
  putOctal(header + 136, 12, static_cast<std::uint64_t>(std::max<std::int64_t>(modified_, 0)));
  header[156] = type;
  std::memcpy(header + 257, "ustar", 6);  // magic with its NUL
  std::memcpy(header + 263, "00", 2);     // version
  std::memcpy(header + 265, "root", 4);
  std::memcpy(header + 297, "root", 4);
  // (memcpy from an empty view's null pointer is undefined even for zero bytes)
  if (!prefix.empty()) std::memcpy(header + 345, prefix.data(), prefix.size());
  // The checksum is taken with its own field as spaces, then written as six digits, NUL, space.
  std::memset(header + 148, ' ', 8);
  unsigned sum = 0;
  for (const char c : header)
    sum += static_cast<unsigned char>(c);
  putOctal(header + 148, 7, sum);
  header[155] = ' ';
  data_.append(header, kBlock);
  data_.append(content);
  data_.append((kBlock - content.size() % kBlock) % kBlock, '\0');
  return okResult();
}

std::string TarArchive::finish() && {
  data_.append(2 * kBlock, '\0');
  return std::move(data_);
}

}  // namespace torus
