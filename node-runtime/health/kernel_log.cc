#include "node-runtime/health/kernel_log.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/sleep_until_stopped.h"
#include "node-runtime/discovery/kernel_ring.h"
#include "node-runtime/discovery/pci_functions.h"

namespace torus::health {
namespace {

constexpr std::string_view kMarker = "NEURON_HW_ERR=";

constexpr std::chrono::milliseconds kRingInterval{1000};

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}
bool isDigit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// Removes `prefix` from the front of `text` when it is there.
bool consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}
// Removes a run of characters that satisfy `accept` (at least one); false, unchanged, when none.
template <typename Accept>
bool consumeWhile(std::string_view& text, Accept accept) {
  std::size_t end = 0;
  while (end < text.size() && accept(text[end]))
    ++end;
  if (end == 0) return false;
  text.remove_prefix(end);
  return true;
}

// "[  12.345678]" (a time) with `letters` empty, "[ T123]" (a caller) with `letters` "TC".
bool consumeBracketed(std::string_view& text, std::string_view letters) {
  std::string_view rest = text;
  if (!consume(rest, "[")) return false;
  consumeWhile(rest, isSpace);
  if (!letters.empty()) {
    if (rest.empty() || letters.find(rest.front()) == std::string_view::npos) return false;
    rest.remove_prefix(1);
  }
  if (!consumeWhile(rest, isDigit)) return false;
  if (letters.empty() && !(consume(rest, ".") && consumeWhile(rest, isDigit))) return false;
  if (!consume(rest, "]")) return false;
  text = rest;
  return true;
}

// The message of a record as /dev/kmsg ("prio,seq,usec,flags;message", its dictionary on
// continuation lines after '\n') or syslog(2) ("<prio>[  sec.usec][ T123]message", the time and
// the caller as the kernel is configured) hands it, or of a line that is a bare message.
std::string_view messageOf(std::string_view line) {
  std::string_view rest = line;
  // /dev/kmsg: three numbers, then flags, then ';'.
  int numbers = 0;
  while (numbers < 3 && consumeWhile(rest, isDigit) && consume(rest, ","))
    ++numbers;
  if (numbers == 3) {
    const std::size_t semicolon = rest.find(';');
    if (semicolon != std::string_view::npos && semicolon <= 8) return rest.substr(semicolon + 1);
  }
  rest = line;
  if (consume(rest, "<") && consumeWhile(rest, isDigit) && consume(rest, ">")) {
    if (std::string_view timed = rest; consumeBracketed(timed, "")) {
      rest = timed;
      if (std::string_view caller = rest; consumeBracketed(caller, "TC")) rest = caller;
      consume(rest, " ");
    }
    return rest;
  }
  return line;
}

// The driver's own prefixes in front of the marker: pr_fmt's "neuron:<func>: " and dev_err's
// "<driver> <PCI function>: " (the driver is "neuron-driver"; "neuron", the module, is accepted
// too). Returns the PCI function of the dev_err form ("" otherwise).
std::string consumeDriverPrefix(std::string_view& message) {
  std::string_view rest = message;
  const auto identifier = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  if (consume(rest, "neuron:") && consumeWhile(rest, identifier) && consume(rest, ": ")) {
    message = rest;
    return "";
  }
  constexpr std::size_t kLength = std::string_view("DDDD:BB:DD.F").size();
  for (const std::string_view driver : {"neuron-driver ", "neuron "}) {
    rest = message;
    if (consume(rest, driver) && rest.size() > kLength &&
        discovery::isPciAddress(rest.substr(0, kLength)) &&
        rest.substr(kLength).starts_with(": ")) {
      message = rest.substr(kLength + 2);
      return std::string(rest.substr(0, kLength));
    }
  }
  return "";
}

// The whitespace-separated words of the message's first line.
std::vector<std::string_view> wordsOf(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t at = 0;
  while (at < text.size() && text[at] != '\n') {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      ++at;
    const std::size_t begin = at;
    while (at < text.size() && !isSpace(text[at]))
      ++at;
    if (at > begin) words.push_back(text.substr(begin, at - begin));
  }
  return words;
}

// "serial-num=" and 16 hexadecimal digits (the driver's info/serial_number, %016llx), lower-cased;
// "" when `word` is another word or malformed.
std::string serialNumberOf(std::string_view word) {
  if (!consume(word, "serial-num=") || word.size() != 16) return "";
  std::string serial;
  for (const char c : word) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return "";
    serial += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return serial;
}

// The PCI function of /dev/kmsg's dictionary field " DEVICE=+pci:DDDD:BB:DD.F" on a continuation
// line (the kernel adds it to a dev_* record); "" when the record has none.
std::string dictionaryPciFunction(std::string_view message) {
  constexpr std::string_view kField = "\n DEVICE=+pci:";
  const std::size_t at = message.find(kField);
  if (at == std::string_view::npos) return "";
  const std::string_view value = message.substr(at + kField.size());
  const std::string_view address = value.substr(0, value.find('\n'));
  return discovery::isPciAddress(address) ? std::string(address) : "";
}

}  // namespace

std::optional<int> deviceOfSerialNumber(const std::vector<std::string>& serials,
                                        std::string_view serialNumber) {
  if (serialNumber.empty()) return std::nullopt;
  const auto found = std::find(serials.begin(), serials.end(), serialNumber);
  if (found == serials.end()) return std::nullopt;
  return static_cast<int>(found - serials.begin());
}

std::optional<int> deviceOfPciFunction(const std::vector<std::string>& functions,
                                       std::string_view pciAddress) {
  const auto found = std::find(functions.begin(), functions.end(), pciAddress);
  if (found == functions.end()) return std::nullopt;
  return static_cast<int>(found - functions.begin());
}

std::string_view lastRingLine(std::string_view ring) {
  // Only complete lines count: text after the final newline is still being written.
  std::size_t end = ring.rfind('\n');
  while (end != std::string_view::npos && end > 0) {
    const std::size_t previous = ring.rfind('\n', end - 1);
    const std::size_t begin = previous == std::string_view::npos ? 0 : previous + 1;
    if (end > begin) return ring.substr(begin, end - begin);
    end = previous;  // an empty line: the one before it
  }
  return {};
}

std::vector<std::string_view> ringLinesAfter(std::string_view ring, std::string_view last) {
  std::size_t from = 0;
  if (!last.empty()) {
    // The last occurrence that is a whole line.
    for (std::size_t at = ring.rfind(last); at != std::string_view::npos;
         at = at == 0 ? std::string_view::npos : ring.rfind(last, at - 1)) {
      const bool starts = at == 0 || ring[at - 1] == '\n';
      const std::size_t end = at + last.size();
      if (starts && end < ring.size() && ring[end] == '\n') {
        from = end + 1;
        break;
      }
    }
  }
  std::vector<std::string_view> lines;
  while (from < ring.size()) {
    const std::size_t newline = ring.find('\n', from);
    if (newline == std::string_view::npos) break;  // not complete yet: the next read has it
    if (newline > from) lines.push_back(ring.substr(from, newline - from));
    from = newline + 1;
  }
  return lines;
}

std::optional<KernelHardwareError> parseKernelLine(std::string_view line) {
  std::string_view message = messageOf(line);
  const std::string prefixFunction = consumeDriverPrefix(message);
  // The marker opens the message: anywhere else it is text someone else's line quotes (a
  // segfault line's file name, a process name, a tenant's own words).
  if (!consume(message, kMarker)) return std::nullopt;
  std::size_t end = 0;
  while (end < message.size() && (std::isupper(static_cast<unsigned char>(message[end])) ||
                                  isDigit(message[end]) || message[end] == '_')) {
    ++end;
  }
  // The type ends at whitespace or the end: "X[401000+1000]" is a file name, not a type.
  if (end == 0 || (end < message.size() && !isSpace(message[end]))) return std::nullopt;
  KernelHardwareError error;
  error.type = std::string(message.substr(0, end));
  for (const std::string_view word : wordsOf(message.substr(end))) {
    if (word.starts_with("serial-num=")) {
      const std::string serial = serialNumberOf(word);
      // Malformed, or a second one: which chip the line is about is not clear.
      if (serial.empty() || !error.serialNumber.empty()) return std::nullopt;
      error.serialNumber = serial;
    } else if (word.starts_with("nd-id=") && error.device < 0 && word.size() <= 9) {
      const std::string_view digits = word.substr(6);
      if (!digits.empty() && std::all_of(digits.begin(), digits.end(), isDigit))
        error.device = std::stoi(std::string(digits));
    }
  }
  // The serial is what names the chip (nd-id counts from the writer's own numbering).
  if (error.serialNumber.empty()) return std::nullopt;
  const std::string dictionaryFunction = dictionaryPciFunction(message);
  if (!prefixFunction.empty() && !dictionaryFunction.empty() &&
      prefixFunction != dictionaryFunction)
    return std::nullopt;
  error.pciAddress = prefixFunction.empty() ? dictionaryFunction : prefixFunction;
  return error;
}

Result<std::unique_ptr<KernelLogWatcher>> KernelLogWatcher::start(const std::filesystem::path& path,
                                                                  OnError onError, Source source,
                                                                  OnReadable onReadable) {
  std::string opened;
  if (source != Source::kSyslog) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd) {
      ::lseek(fd.get(), 0, SEEK_END);  // /dev/kmsg: skip the ring buffer; a file: what is there
      return std::make_unique<KernelLogWatcher>(std::move(fd), path.string(), std::move(onError),
                                                std::move(onReadable));
    }
    opened = "cannot read the kernel log " + path.string() + ": " + std::strerror(errno);
    const bool refused = errno == EPERM || errno == EACCES;
    if (source == Source::kFile || !refused) return makeError(ErrorCode::kUnavailable, opened);
  }
  auto ring = discovery::readKernelRing();
  if (!ring) {
    return makeError(ErrorCode::kUnavailable,
                     opened.empty() ? ring.error().message : opened + "; " + ring.error().message);
  }
  return std::make_unique<KernelLogWatcher>(std::string(lastRingLine(*ring)), std::move(onError),
                                            std::move(onReadable));
}

KernelLogWatcher::KernelLogWatcher(UniqueFd fd, std::string path, OnError onError,
                                   OnReadable onReadable)
    : fd_(std::move(fd)),
      path_(std::move(path)),
      onError_(std::move(onError)),
      onReadable_(std::move(onReadable)) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

KernelLogWatcher::KernelLogWatcher(std::string lastLine, OnError onError, OnReadable onReadable)
    : path_("syslog(2)"), onError_(std::move(onError)), onReadable_(std::move(onReadable)) {
  thread_ = std::jthread(
      [this, last = std::move(lastLine)](std::stop_token stop) { runRing(stop, last); });
}

KernelLogWatcher::~KernelLogWatcher() {
  thread_.request_stop();
}

void KernelLogWatcher::run(std::stop_token stop) {
  std::string pending;
  char buffer[8192];
  while (!stop.stop_requested()) {
    // /dev/kmsg wakes poll() per record; a regular file is always "readable" and reads 0 at its
    // end, so it is re-checked after a pause (an idle agent must cost next to nothing).
    if (!fd_) {
      // Lost: try again from the log's end once a second.
      std::this_thread::sleep_for(std::chrono::seconds(1));
      UniqueFd reopened(::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
      if (!reopened) continue;
      ::lseek(reopened.get(), 0, SEEK_END);
      fd_ = std::move(reopened);
      pending.clear();
      noteReadable("");
      continue;
    }
    pollfd wait{fd_.get(), POLLIN, 0};
    ::poll(&wait, 1, 1000);
    const ssize_t got = ::read(fd_.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EPIPE) continue;  // kmsg records overwritten before we read them
      if (errno != EAGAIN && errno != EINTR) {
        noteReadable("reading " + path_ + " failed: " + std::strerror(errno));
        fd_ = UniqueFd();
      }
      continue;
    }
    if (got == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      continue;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
    // A /dev/kmsg read is one record: its message, then its dictionary on lines that start with
    // a space (" DEVICE=+pci:..."), which belong to it.
    std::string record;
    for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (line.starts_with(' ') && !record.empty()) {
        record += '\n' + line;
        continue;
      }
      if (!record.empty()) handle(record);
      record = line;
    }
    if (!record.empty()) handle(record);
    if (pending.size() > sizeof buffer) pending.clear();  // no newline in sight: not a log line
  }
}

void KernelLogWatcher::runRing(std::stop_token stop, std::string last) {
  while (!sleepUntilStopped(stop, kRingInterval)) {
    auto ring = discovery::readKernelRing();
    if (!ring) {
      noteReadable(ring.error().message);
      continue;
    }
    if (!lostBecause_.empty()) {
      // Read again: follow from what is there now (what came in between is lost either way).
      noteReadable("");
      last = std::string(lastRingLine(*ring));
      continue;
    }
    for (const std::string_view line : ringLinesAfter(*ring, last))
      handle(line);
    if (const std::string_view now = lastRingLine(*ring); !now.empty()) last = std::string(now);
  }
}

void KernelLogWatcher::noteReadable(const std::string& lostBecause) {
  if (lostBecause == lostBecause_) return;
  if (lostBecause.empty()) {
    TORUS_LOG(Info, Health, "the kernel log is read again", {"path", path_},
              {"was_lost_because", lostBecause_});
  } else {
    TORUS_LOG(Warn, Health, "kernel log read failed; retrying every second", {"path", path_},
              {"error", lostBecause});
  }
  lostBecause_ = lostBecause;
  if (onReadable_) onReadable_(lostBecause_);
}

void KernelLogWatcher::handle(std::string_view line) {
  if (auto error = parseKernelLine(line)) onError_(*error, std::string(line));
}

}  // namespace torus::health
