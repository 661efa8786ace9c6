#include "node-runtime/discovery/pci_map_record.h"

#include <system_error>

#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parse.h"
#include "common/base/strings.h"
#include "node-runtime/discovery/pci_functions.h"

namespace torus::discovery {
namespace {

Error badLine(std::size_t number, std::string_view line, const std::string& why) {
  return makeError(
      ErrorCode::kInvalidArgument,
      "line " + std::to_string(number) + " (\"" + std::string(line.substr(0, 80)) + "\"): " + why);
}

}  // namespace

std::string currentBootId() {
  auto text = readSmallFile("/proc/sys/kernel/random/boot_id", 128);
  return text ? std::string(trim(*text)) : std::string();
}

std::string renderPciMapRecord(const PciMapRecord& record) {
  std::string text = "boot_id " + record.bootId + "\nsource " + record.source + "\nbound";
  for (const std::string& function : record.bound)
    text += " " + function;
  text += "\n";
  for (const auto& [index, function] : record.functionOf) {
    text += "neuron" + std::to_string(index) + " " + function + "\n";
  }
  return text;
}

Result<PciMapRecord> parsePciMapRecord(std::string_view text) {
  PciMapRecord record;
  std::size_t number = 0;
  for (const std::string_view line : splitAndTrim(text, '\n')) {
    ++number;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    const std::string_view key = line.substr(0, space);
    const std::string_view value =
        space == std::string_view::npos ? std::string_view() : trim(line.substr(space + 1));
    if (key == "boot_id") {
      record.bootId = std::string(value);
    } else if (key == "source") {
      record.source = std::string(value);
    } else if (key == "bound") {
      for (const std::string_view function : splitAndTrim(value, ' ')) {
        if (function.empty()) continue;
        if (!isPciAddress(function)) return badLine(number, line, "not a PCI function address");
        record.bound.emplace_back(function);
      }
    } else if (key.starts_with("neuron")) {
      auto index = parseInt(key.substr(6), 0, 1023);
      if (!index) return badLine(number, line, "not neuronN");
      if (!isPciAddress(value)) return badLine(number, line, "not a PCI function address");
      if (!record.functionOf.emplace(*index, std::string(value)).second) {
        return badLine(number, line, "a second line for the device");
      }
    } else {
      return badLine(number, line, "unknown key");
    }
  }
  if (record.bootId.empty()) return makeError(ErrorCode::kInvalidArgument, "no boot_id line");
  return record;
}

Result<void> writePciMapRecord(const std::filesystem::path& file, const PciMapRecord& record) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    return makeError(ErrorCode::kInternal,
                     "creating " + file.parent_path().string() + ": " + ec.message());
  }
  return writeFileAtomically(file, renderPciMapRecord(record), Durability::kAtomicOnly);
}

std::optional<PciMapRecord> readPciMapRecord(const std::filesystem::path& file,
                                             const std::string& bootId,
                                             const std::vector<std::string>& bound) {
  auto text = readSmallFile(file, 64 * 1024);
  if (!text) return std::nullopt;  // none kept yet
  auto record = parsePciMapRecord(*text);
  if (!record) {
    TORUS_LOG(Warn, Discovery, "ignoring the kept PCI map: it cannot be parsed",
              {"file", file.string()}, {"error", record.error().message});
    return std::nullopt;
  }
  if (bootId.empty() || record->bootId != bootId || record->bound != bound) return std::nullopt;
  return std::move(*record);
}

}  // namespace torus::discovery
