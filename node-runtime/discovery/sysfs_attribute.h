// Parsers for the Neuron driver's sysfs attribute text, and a reader that names the file.
//
// The parsers are pure (text in, value or error out) so tests and fuzzers can feed them garbage
// directly. Formats, from the driver: core_count "%d" with no newline; connected_devices
// "a, b, c\n" (or "\n" when none); counters "%u\n" / "%llu\n"; serial_number "%016llx\n";
// node_id_* "%d\n" or "busy"; server_id_* "%016llx\n"; ultraserver_mode "1,2,4\n" or "\n".
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::discovery {

constexpr int kMaxCoresPerDevice = 8;  // the driver's MAX_NC_PER_DEVICE
constexpr int kMaxDevices = 64;        // the driver's MAX_NEURON_DEVICE_COUNT

Result<int> parseCoreCount(std::string_view text);
Result<std::vector<int>> parseConnectedDevices(std::string_view text);
Result<std::uint64_t> parseCounter(std::string_view text);
Result<std::string> parseSerialNumber(std::string_view text);   // "" when the driver prints none
Result<int> parseResetState(std::string_view text);             // 0 RESET, 1 READY, 2 INVALID
Result<int> parseUltraServerNodeId(std::string_view text);      // -1 when not in an UltraServer
Result<std::string> parseUltraServerId(std::string_view text);  // "" for all zeros
Result<std::vector<int>> parseUltraServerModes(std::string_view text);
Result<std::string> parseName(std::string_view text);  // printable one-line names

// Reads an attribute (at most 4 KiB). Errors carry the path: "<path>: ...".
Result<std::string> readAttribute(const std::filesystem::path& path);

// Stores `text` into an existing attribute the way a sysfs store works: one write at offset 0,
// never truncating first, so a reader racing the store sees the old or the new value, never an
// empty file (where attributes are plain files, as in a simulated tree). Errors carry the path.
Result<void> writeAttribute(const std::filesystem::path& path, std::string_view text);

// Reads and parses; the error reads "<name>: expected ..., got "..." (<path>)".
template <typename Parse>
auto readParsed(const std::filesystem::path& path, std::string_view name, Parse parse)
    -> decltype(parse(std::string_view{})) {
  auto text = readAttribute(path);
  if (!text) return std::move(text).error();
  auto value = parse(*text);
  if (!value) {
    return makeError(value.error().code,
                     std::string(name) + ": " + value.error().message + " (" + path.string() + ")");
  }
  return value;
}

}  // namespace torus::discovery
