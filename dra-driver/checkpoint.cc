#include "dra-driver/checkpoint.h"

#include <algorithm>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/base/file_io.h"
#include "common/base/json_fields.h"
#include "common/base/json_nesting.h"
#include "common/base/stable_hash.h"
#include "common/base/strings.h"

namespace torus::dra {
namespace {

using nlohmann::json;

// 2: {"version", "checksum", "data": {claims, pendingReset, unresetCores}}, the checksum over
// data's compact dump (keys sorted), so a damaged or hand-edited file is refused, not misread.
// 1 (before 2026-11-27): the same fields at the top, no checksum; read and converted forward
// (devices without their own visibleCores show the whole claim's, as that driver wrote them).
constexpr int kFormatVersion = 2;
constexpr std::size_t kMaxCheckpointBytes = 16 << 20;

std::string checksumOf(const json& data) {
  return "fnv1a64:" + hex16(fnv1a64(data.dump()));
}

json toJson(const ResolvedClaim& claim) {
  json devices = json::array();
  for (const AllocatedDevice& device : claim.devices) {
    devices.push_back({{"name", device.name},
                       {"requests", device.requests},
                       {"visibleCores", device.visibleCores}});
  }
  json entry = {{"namespace", claim.ref.nameSpace},
                {"name", claim.ref.name},
                {"pool", claim.pool},
                {"devices", std::move(devices)},
                {"chips", claim.chips.ids()},
                {"cores", claim.cores.ids()},
                {"wholeChips", claim.wholeChips},
                {"lnc", claim.lnc},
                {"visibleCores", claim.visibleCores}};
  if (claim.ultraServerMode) entry["ultraServerMode"] = *claim.ultraServerMode;
  if (!claim.consumerPods.empty()) entry["consumerPods"] = claim.consumerPods;
  return entry;
}

Result<topology::CoreSet> idSet(const json& entry, const char* key, const std::string& where) {
  auto ids = required<std::vector<int>>(entry, key, where);
  if (!ids) return std::move(ids).error();
  for (const int id : *ids) {
    if (id < 0 || id >= topology::CoreSet::kCapacity) {
      return fieldError(fieldPath(where, key), "holds " + std::to_string(id) + ", out of range");
    }
  }
  return topology::CoreSet::fromIds(*ids);
}

Result<ResolvedClaim> fromJson(const std::string& uid, const json& entry) {
  const std::string where = "claim " + uid;
  if (!entry.is_object()) return makeError(ErrorCode::kInvalidArgument, where + ": not an object");
  ResolvedClaim claim;
  claim.ref.uid = uid;
  auto nameSpace = required<std::string>(entry, "namespace", where);
  auto name = required<std::string>(entry, "name", where);
  auto pool = required<std::string>(entry, "pool", where);
  auto wholeChips = required<bool>(entry, "wholeChips", where);
  auto lnc = required<int>(entry, "lnc", where);
  auto visible = required<std::vector<int>>(entry, "visibleCores", where);
  auto chips = idSet(entry, "chips", where);
  auto cores = idSet(entry, "cores", where);
  for (const Error* error :
       {nameSpace ? nullptr : &nameSpace.error(), name ? nullptr : &name.error(),
        pool ? nullptr : &pool.error(), wholeChips ? nullptr : &wholeChips.error(),
        lnc ? nullptr : &lnc.error(), visible ? nullptr : &visible.error(),
        chips ? nullptr : &chips.error(), cores ? nullptr : &cores.error()}) {
    if (error != nullptr) return *error;
  }
  claim.ref.nameSpace = *nameSpace;
  claim.ref.name = *name;
  claim.pool = *pool;
  claim.wholeChips = *wholeChips;
  claim.lnc = *lnc;
  claim.visibleCores = *visible;
  claim.chips = *chips;
  claim.cores = *cores;
  if (entry.contains("ultraServerMode")) {
    auto mode = required<int>(entry, "ultraServerMode", where);
    if (!mode) return std::move(mode).error();
    claim.ultraServerMode = *mode;
  }
  // Written by drivers before the consumers were kept: none known.
  if (entry.contains("consumerPods")) {
    auto consumers = required<std::vector<std::string>>(entry, "consumerPods", where);
    if (!consumers) return std::move(consumers).error();
    claim.consumerPods = std::move(*consumers);
  }
  const auto devices = entry.find("devices");
  if (devices == entry.end() || !devices->is_array()) {
    return fieldError(fieldPath(where, "devices"), "expected a list");
  }
  for (const json& device : *devices) {
    auto deviceName = required<std::string>(device, "name", where + " device");
    if (!deviceName) return std::move(deviceName).error();
    auto requests = required<std::vector<std::string>>(device, "requests", where + " device");
    if (!requests) return std::move(requests).error();
    const std::optional<NamedDevice> what = parseDeviceName(*deviceName);
    if (!what) {
      return makeError(ErrorCode::kInvalidArgument,
                       where + ": device \"" + *deviceName + "\" is not a name this driver uses");
    }
    // Written by drivers before per-device environments: the device showed the whole claim.
    std::vector<int> shown = claim.visibleCores;
    if (device.contains("visibleCores")) {
      auto own = required<std::vector<int>>(device, "visibleCores", where + " device");
      if (!own) return std::move(own).error();
      shown = *own;
    }
    claim.devices.push_back({*requests, *deviceName, *what, false, std::move(shown)});
  }
  return claim;
}

}  // namespace

Result<DriverState> loadCheckpoint(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return DriverState{};
  auto text = readSmallFile(path, kMaxCheckpointBytes);
  if (!text) return std::move(text).error().withContext("reading the DRA checkpoint");
  return parseCheckpoint(*text, "DRA checkpoint " + path.string());
}

Result<DriverState> parseCheckpoint(std::string_view text, const std::string& where) {
  // Our own file, but a disk can hand back anything: refuse absurd nesting before parsing.
  TORUS_RETURN_IF_ERROR(checkJsonNesting(text), where);
  const json document = json::parse(text, nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    return makeError(ErrorCode::kInvalidArgument, where + ": not a JSON object");
  }
  const auto version = document.find("version");
  const std::int64_t number =
      version != document.end() && version->is_number_integer() ? version->get<std::int64_t>() : 0;
  const json* data = &document;  // version 1 kept its fields at the top, with no checksum
  if (number == kFormatVersion) {
    const auto body = document.find("data");
    const auto checksum = document.find("checksum");
    if (body == document.end() || !body->is_object() || checksum == document.end() ||
        !checksum->is_string()) {
      return makeError(ErrorCode::kInvalidArgument, where + ": version " + std::to_string(number) +
                                                        " needs \"data\" and \"checksum\"");
    }
    if (checksum->get<std::string>() != checksumOf(*body)) {
      return makeError(ErrorCode::kInvalidArgument,
                       where +
                           ": its checksum does not match its data (the file was damaged or "
                           "edited by hand)");
    }
    data = &*body;
  } else if (number != 1) {
    return makeError(ErrorCode::kInvalidArgument,
                     where + ": format version " +
                         (version == document.end() ? std::string("missing") : version->dump()) +
                         " is not one this driver reads (1 to " + std::to_string(kFormatVersion) +
                         ")");
  }
  const auto claims = data->find("claims");
  if (claims == data->end() || !claims->is_object()) {
    return fieldError(fieldPath(where, "claims"), "expected an object");
  }
  DriverState loaded;
  for (const auto& [uid, entry] : claims->items()) {
    auto claim = fromJson(uid, entry);
    if (!claim) return std::move(claim).error().withContext(where);
    loaded.claims.emplace(uid, std::move(*claim));
  }
  if (data->contains("pendingReset")) {
    auto pending = idSet(*data, "pendingReset", where);
    if (!pending) return std::move(pending).error();
    loaded.pendingReset = *pending;
  }
  if (data->contains("unresetCores")) {
    auto unreset = idSet(*data, "unresetCores", where);
    if (!unreset) return std::move(unreset).error();
    loaded.unresetCores = *unreset;
  }
  return loaded;
}

Result<void> saveCheckpoint(const std::filesystem::path& path, const DriverState& state,
                            Durability durability) {
  json entries = json::object();
  for (const auto& [uid, claim] : state.claims)
    entries[uid] = toJson(claim);
  json data = {{"claims", std::move(entries)},
               {"pendingReset", state.pendingReset.ids()},
               {"unresetCores", state.unresetCores.ids()}};
  const std::string checksum = checksumOf(data);
  const json document = {
      {"version", kFormatVersion}, {"checksum", checksum}, {"data", std::move(data)}};
  return writeFileAtomically(path, document.dump(1) + "\n", durability);
}

}  // namespace torus::dra
