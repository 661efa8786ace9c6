// Hardware errors the Neuron driver reports in the kernel log ("NEURON_HW_ERR=<TYPE>", the lines
// AWS's node-problem-detector rules match), followed live from /dev/kmsg (or any file lines are
// appended to). Only lines written after the agent starts count: the ring buffer's old lines
// describe faults a previous run already handled.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace torus::health {

struct KernelHardwareError {
  std::string type;  // e.g. HBM_UNCORRECTABLE_ERROR
  int device = -1;   // -1 when the line names no device
};

// Parses one kernel log line or /dev/kmsg record ("6,123,456,-;message"). The device comes from
// "nd<N>", "neuron<N>", "nd-id=<N>" or "device=<N>" when the line has one.
std::optional<KernelHardwareError> parseKernelLine(std::string_view line);

class KernelLogWatcher {
 public:
  using OnError = std::function<void(const KernelHardwareError& error, const std::string& line)>;

  // Opens `path` positioned at its end; errors name the path (a missing /dev/kmsg, no rights).
  static Result<std::unique_ptr<KernelLogWatcher>> start(const std::filesystem::path& path,
                                                         OnError onError);
  KernelLogWatcher(UniqueFd fd, std::string path, OnError onError);
  ~KernelLogWatcher();
  KernelLogWatcher(const KernelLogWatcher&) = delete;
  KernelLogWatcher& operator=(const KernelLogWatcher&) = delete;

 private:
  void run(std::stop_token stop);

  UniqueFd fd_;
  std::string path_;
  OnError onError_;
  std::jthread thread_;
};

}  // namespace torus::health
