#include "node-runtime/discovery/sysfs_attribute.h"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "common/base/unique_fd.h"

namespace torus::discovery {
namespace {

Error unexpected(std::string_view expected, std::string_view text) {
  return makeError(ErrorCode::kInvalidArgument, "expected " + std::string(expected) + ", got " +
                                                    quoteJsonString(clipForMessage(text)));
}

bool isHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

}  // namespace

Result<int> parseCoreCount(std::string_view text) {
  auto value = parseInt(text, 1, kMaxCoresPerDevice);
  if (!value) return unexpected("a core count in [1, 8]", text);
  return value;
}

Result<std::vector<int>> parseConnectedDevices(std::string_view text) {
  auto list = parseIntList(text, ',', 0, kMaxDevices - 1);
  if (!list) return unexpected("comma-separated device indices in [0, 63]", text);
  if (list->size() > 8) return unexpected("at most 8 connected devices", text);
  return list;
}

Result<std::uint64_t> parseCounter(std::string_view text) {
  auto value = parseUint64(text);
  if (!value) return unexpected("an unsigned counter", text);
  return value;
}

Result<std::string> parseSerialNumber(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty()) return std::string();
  if (trimmed.size() != 16) return unexpected("16 hex digits", text);
  for (const char c : trimmed) {
    if (!isHexDigit(c)) return unexpected("16 hex digits", text);
  }
  return std::string(trimmed);
}

Result<int> parseResetState(std::string_view text) {
  auto value = parseInt(text, 0, 2);
  if (!value) return unexpected("a reset state 0 (RESET), 1 (READY) or 2 (INVALID)", text);
  return value;
}

Result<int> parseUltraServerNodeId(std::string_view text) {
  auto value = parseInt(text, -1, 3);
  if (!value) return unexpected("a node id in [-1, 3]", text);
  return value;
}

Result<std::string> parseUltraServerId(std::string_view text) {
  auto serial = parseSerialNumber(text);
  if (!serial) return unexpected("a 16-hex-digit server id", text);
  if (*serial == "0000000000000000") return std::string();
  return serial;
}

Result<std::vector<int>> parseUltraServerModes(std::string_view text) {
  auto modes = parseIntList(text, ',', 1, 4);
  if (!modes) return unexpected("a comma list of UltraServer modes in [1, 4]", text);
  return modes;
}

Result<std::string> parseName(std::string_view text) {
  const std::string_view trimmed = trim(text);
  if (trimmed.empty() || trimmed.size() > 64) return unexpected("a name", text);
  for (const char c : trimmed) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) return unexpected("a printable name", text);
  }
  return std::string(trimmed);
}

Result<void> writeAttribute(const std::filesystem::path& path, std::string_view text) {
  const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return makeError(ErrorCode::kUnavailable, path.string() + ": " + errnoText(errno));
  }
  const ssize_t written = ::write(fd.get(), text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size())) {
    return makeError(ErrorCode::kUnavailable,
                     path.string() + ": " + (written < 0 ? errnoText(errno) : "short write"));
  }
  return okResult();
}

Result<std::string> readAttribute(const std::filesystem::path& path) {
  return readSmallFile(path, 4096);
}

}  // namespace torus::discovery
