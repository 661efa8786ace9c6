#include "node-runtime/health/deep_check/deep_check_report.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/base/text_table.h"

namespace torus::health {
namespace {

std::string fixed(double value, int decimals, std::string_view unit = "") {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return std::string(buffer) + std::string(unit);
}

std::string mebibytes(std::uint64_t bytes) {
  return fixed(static_cast<double>(bytes) / (1 << 20), 1, " MiB");
}

}  // namespace

std::vector<std::string> deepCheckFailures(const DeepCheckResult& result) {
  std::vector<std::string> failures;
  for (const DeviceCheck& device : result.devices) {
    if (device.state == CheckState::kFailed) failures.push_back(device.detail);
  }
  for (const LinkCheck& link : result.links) {
    if (link.state == CheckState::kFailed) failures.push_back(link.detail);
  }
  if (result.command && result.command->state == CheckState::kFailed) {
    failures.push_back(result.command->detail);
  }
  if (!result.hostAllReduceProblem.empty()) failures.push_back(result.hostAllReduceProblem);
  return failures;
}

std::string deepCheckJson(const DeepCheckResult& result) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceCheck& device : result.devices) {
    devices.push_back({{"device", device.device},
                       {"state", checkStateName(device.state)},
                       {"detail", device.detail},
                       {"memoryBytes", device.memoryBytes},
                       {"memorySeconds", device.memorySeconds}});
  }
  nlohmann::json links = nlohmann::json::array();
  for (const LinkCheck& link : result.links) {
    nlohmann::json entry = {{"devices", {link.a, link.b}},
                            {"state", checkStateName(link.state)},
                            {"detail", link.detail},
                            {"speedGTs", nullptr},
                            {"maxSpeedGTs", nullptr}};
    if (link.speed) {
      entry["speedGTs"] = link.speed->current;
      entry["maxSpeedGTs"] = link.speed->max;
    }
    links.push_back(std::move(entry));
  }
  nlohmann::json hostAllReduce = {{"ring", result.ring},
                                  {"alongNeuronLink", result.ringAlongLinks},
                                  {"bytesPerRank", result.hostAllReduceBytes},
                                  {"seconds", nullptr},
                                  {"problem", result.hostAllReduceProblem}};
  if (result.hostAllReduceSeconds) hostAllReduce["seconds"] = *result.hostAllReduceSeconds;
  nlohmann::json command = nullptr;
  if (result.command) {
    command = {
        {"command", result.command->command}, {"state", checkStateName(result.command->state)},
        {"detail", result.command->detail},   {"exitCode", result.command->exitCode},
        {"seconds", result.command->seconds}, {"devices", result.command->devices},
        {"output", result.command->output}};
  }
  nlohmann::json notChecked = nlohmann::json::array();
  for (const NotChecked& item : result.notChecked) {
    notChecked.push_back({{"part", item.part}, {"why", item.why}});
  }
  const nlohmann::json out = {{"passed", result.passed()},
                              {"startedAt", result.startedAt},
                              {"seconds", result.seconds},
                              {"failures", deepCheckFailures(result)},
                              {"notChecked", std::move(notChecked)},
                              {"devices", std::move(devices)},
                              {"links", std::move(links)},
                              {"command", std::move(command)},
                              {"hostAllReduce", std::move(hostAllReduce)}};
  return out.dump(2) + "\n";
}

std::string deepCheckTable(const DeepCheckResult& result) {
  TextTable devices({"DEVICE", "MEMORY\nTEST", "WINDOW", "TIME", "DETAIL"});
  for (const DeviceCheck& device : result.devices) {
    const bool tested = device.state == CheckState::kPassed || device.state == CheckState::kFailed;
    devices.addRow({"neuron" + std::to_string(device.device),
                    std::string(checkStateName(device.state)),
                    tested ? mebibytes(device.memoryBytes) : "-",
                    tested ? fixed(device.memorySeconds * 1000, 1, " ms") : "-", device.detail});
  }
  TextTable links({"NEURONLINK", "STATE\n(DRIVER)", "TRAINED\nSPEED", "DETAIL"});
  for (const LinkCheck& link : result.links) {
    links.addRow({std::to_string(link.a) + "-" + std::to_string(link.b),
                  std::string(checkStateName(link.state)),
                  link.speed
                      ? fixed(link.speed->current, 1) + "/" + fixed(link.speed->max, 1) + " GT/s"
                      : "-",
                  link.detail});
  }
  std::string ring;
  for (const int device : result.ring) {
    // Appended piecewise: GCC 12 -O3 misreads (-Wrestrict) "literal" + std::string&&.
    if (!ring.empty()) ring += ' ';
    ring += std::to_string(device);
  }
  std::string out = devices.render() + links.render();
  if (result.command) {
    out += "Check command (" + result.command->command + "): " +
           (result.command->state == CheckState::kPassed ? std::string("passed") : "FAILED") +
           " in " + fixed(result.command->seconds, 2, " s") + "\n";
    if (!result.command->detail.empty()) out += "  " + result.command->detail + "\n";
  }
  out += "Host AllReduce ring (" + mebibytes(result.hostAllReduceBytes) +
         " per device, on this host's CPU): " +
         (result.ring.size() < 2        ? std::string("not run")
          : result.hostAllReduceSeconds ? fixed(*result.hostAllReduceSeconds * 1000, 2, " ms")
                                        : std::string("failed")) +
         (ring.empty() ? "" : "; order " + ring) + "\n";
  if (!result.hostAllReduceProblem.empty()) out += "  " + result.hostAllReduceProblem + "\n";
  for (const NotChecked& item : result.notChecked) {
    std::string part = item.part;
    std::replace(part.begin(), part.end(), '_', ' ');
    out += "Not checked: " + part + " (" + item.why + ")\n";
  }
  const std::vector<std::string> failures = deepCheckFailures(result);
  out += "Deep check " + std::string(failures.empty() ? "passed" : "FAILED") + " in " +
         fixed(result.seconds, 2, " s") + " (" + std::to_string(failures.size()) + " failures)\n";
  return out;
}

}  // namespace torus::health
