// Hardware errors the Neuron driver reports in the kernel log ("NEURON_HW_ERR=<TYPE>", the lines
// AWS's node-problem-detector rules match), followed live from /dev/kmsg (or any file lines are
// appended to). Only lines written after the agent starts count: the ring buffer's old lines
// describe faults a previous run already handled.
//
// A container that is not privileged may not open /dev/kmsg on a real node whatever its
// capabilities: the runtime's device rules allow only a few device nodes, and kmsg (1:11) is not
// one (the open answers EPERM). The same log is readable through syslog(2) with CAP_SYSLOG, which
// the chart grants; when the open is refused, the watcher reads the ring buffer that way instead,
// once a second, and hands on the lines added since its last read.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace torus::health {

struct KernelHardwareError {
  std::string type;  // e.g. HBM_UNCORRECTABLE_ERROR
  // The line's nd-id= (the writer's own numbering, for the log only); -1 when it has none.
  int device = -1;
  // The PCI function the driver's dev_* prefix ("neuron-driver 0000:10:1e.0: ") or /dev/kmsg's
  // DEVICE=+pci: field names; "" when neither does (the runtime's lines never carry one).
  std::string pciAddress;
  // The chip's serial number as the runtime writes it ("serial-num=19fcda00f5ff6eb9", the
  // driver's info/serial_number format, %016llx, lower-cased here).
  std::string serialNumber;
};

// Parses one kernel log line: a /dev/kmsg record ("3,123,456,-;message", its dictionary on
// continuation lines), a syslog(2) line ("<3>[  12.345678] message") or a bare message. Only the
// shapes the runtime (through the driver's printk ioctl, no prefix) and the driver write count:
// the message starts with "NEURON_HW_ERR=", after at most the driver's own "neuron:<func>: " or
// dev_* prefix; the type is [A-Z0-9_]+ ending at whitespace; exactly one well-formed
// "serial-num=" names the chip. Anything else is nullopt: a segfault line whose file name holds
// the marker, the marker mid-line, a line without a serial. A PCI function comes only from the
// dev_* prefix or the DEVICE= field. Any holder of a device node can still write a line of this
// shape: what the parser accepts is a claim, not proof (hardware_error_proof.h).
std::optional<KernelHardwareError> parseKernelLine(std::string_view line);

// The device a line that names the PCI function `pciAddress` is about: the index of that function
// in `functions`, each device's function as discovery placed it (discovery/pci_functions.h; ""
// where unknown). nullopt when the function is not one of this node's: a line about another
// node's device, or about a device whose function is unknown, is not charged to any.
std::optional<int> deviceOfPciFunction(const std::vector<std::string>& functions,
                                       std::string_view pciAddress);
// The same by serial number, among each device's info/serial_number ("" where unknown): the
// serial names the chip wherever nd-id counts from (a container's own numbering, or another node
// sharing the log); nullopt when no device of this node has it.
std::optional<int> deviceOfSerialNumber(const std::vector<std::string>& serials,
                                        std::string_view serialNumber);

// The lines of a syslog(2) read of the ring buffer (`ring`) that follow `last`, the final line of
// the previous read: those after its last occurrence, or all of them when it is gone (the ring
// wrapped past it) or empty.
std::vector<std::string_view> ringLinesAfter(std::string_view ring, std::string_view last);
// The final complete, non-empty line of a ring read ("" when it has none).
std::string_view lastRingLine(std::string_view ring);

class KernelLogWatcher {
 public:
  using OnError = std::function<void(const KernelHardwareError& error, const std::string& line)>;
  // Called with why when the log stops being readable (the watcher keeps trying, once a second,
  // from the log's end then) and with "" when it is read again: lines written in between are
  // lost, and the caller says so (health::NodeMonitor::setSourceLost).
  using OnReadable = std::function<void(const std::string& lostBecause)>;

  enum class Source {
    kFile,    // `path` opened and read as it grows (/dev/kmsg, a test's file)
    kSyslog,  // the kernel's ring buffer through syslog(2)
    kEither,  // `path`, or syslog(2) when opening it is refused (EPERM, EACCES)
  };
  // Follows the log from its end; errors name the path and the reason (a missing /dev/kmsg, no
  // rights, syslog(2) refused without CAP_SYSLOG).
  static Result<std::unique_ptr<KernelLogWatcher>> start(const std::filesystem::path& path,
                                                         OnError onError,
                                                         Source source = Source::kEither,
                                                         OnReadable onReadable = {});
  KernelLogWatcher(UniqueFd fd, std::string path, OnError onError, OnReadable onReadable = {});
  // Reading the ring through syslog(2); `lastLine` is the final line already there.
  KernelLogWatcher(std::string lastLine, OnError onError, OnReadable onReadable = {});
  // What it reads: the path, or "syslog(2)".
  const std::string& source() const { return path_; }
  ~KernelLogWatcher();
  KernelLogWatcher(const KernelLogWatcher&) = delete;
  KernelLogWatcher& operator=(const KernelLogWatcher&) = delete;

 private:
  void run(std::stop_token stop);
  void runRing(std::stop_token stop, std::string last);
  void handle(std::string_view line);
  // Reports a change between readable and lost (`lostBecause` empty: readable) once.
  void noteReadable(const std::string& lostBecause);

  UniqueFd fd_;
  std::string path_;
  OnError onError_;
  OnReadable onReadable_;
  std::string lostBecause_;  // (the watcher's thread only)
  std::jthread thread_;
};

}  // namespace torus::health
