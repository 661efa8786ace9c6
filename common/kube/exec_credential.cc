#include "common/kube/exec_credential.h"

#include <cstdio>
#include <ctime>

#include <sys/stat.h>
#include <unistd.h>

#include "common/base/file_io.h"
#include "common/base/strings.h"
#include "common/base/subprocess.h"

namespace torus::kube {
namespace {

using nlohmann::json;

constexpr std::string_view kV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kV1beta1 = "client.authentication.k8s.io/v1beta1";
constexpr std::size_t kStderrInMessage = 2000;

Error badOutput(const std::string& why) {
  return makeError(ErrorCode::kInvalidArgument,
                   "its output is not a usable ExecCredential: " + why);
}

std::string encodeBase64(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                       (static_cast<unsigned char>(data[i + 1]) << 8) |
                       static_cast<unsigned char>(data[i + 2]);
    for (int shift : {18, 12, 6, 0})
      out += kAlphabet[(n >> shift) & 63];
  }
  if (i + 1 == data.size()) {
    const unsigned n = static_cast<unsigned char>(data[i]) << 16;
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == data.size()) {
    const unsigned n = (static_cast<unsigned char>(data[i]) << 16) |
                       (static_cast<unsigned char>(data[i + 1]) << 8);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

// A string field of `status`, which may be absent; anything but a string is an error.
Result<std::string> optionalString(const json& status, const char* field) {
  if (!status.contains(field) || status[field].is_null()) return std::string();
  if (!status[field].is_string()) {
    return badOutput(std::string("status.") + field + " is a " + status[field].type_name() +
                     ", not a string");
  }
  return status[field].get<std::string>();
}

Result<std::string> writePrivately(const TempDir& dir, const char* name, const std::string& data) {
  const auto path = dir.path() / name;
  TORUS_RETURN_IF_ERROR(writeFile(path, data), name);
  ::chmod(path.c_str(), 0600);
  return path.string();
}

std::string lastPart(std::string_view text) {
  text = trim(text);
  if (text.size() > kStderrInMessage) text = text.substr(text.size() - kStderrInMessage);
  return std::string(text);
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text) {
  int year, month, day, hour, minute, second, used = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6 ||
      used != 19) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest.front() == '.') {  // fractional seconds: a credential's is whole
    rest.remove_prefix(1);
    if (rest.empty() || rest.front() < '0' || rest.front() > '9') return std::nullopt;
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9')
      rest.remove_prefix(1);
  }
  long offsetSeconds = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int hours, minutes;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &hours, &minutes) != 2) {
      return std::nullopt;
    }
    offsetSeconds = (rest[0] == '-' ? -1 : 1) * (hours * 3600L + minutes * 60L);
  } else {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm fields{};
  fields.tm_year = year - 1900;
  fields.tm_mon = month - 1;
  fields.tm_mday = day;
  fields.tm_hour = hour;
  fields.tm_min = minute;
  fields.tm_sec = second;
  const std::time_t utc = ::timegm(&fields);
  return std::chrono::system_clock::from_time_t(utc - offsetSeconds);
}

Result<ParsedExecCredential> parseExecCredential(std::string_view text,
                                                 std::string_view apiVersion) {
  const json credential = json::parse(text, nullptr, false);
  if (credential.is_discarded()) {
    return badOutput(trim(text).empty()
                         ? "stdout is empty"
                         : "stdout is not JSON: " + quoteJsonString(clipForMessage(trim(text))));
  }
  if (!credential.is_object()) return badOutput("stdout is JSON but not an object");
  const json& version = credential.contains("apiVersion") ? credential["apiVersion"] : json();
  if (!version.is_string() || version.get<std::string>() != apiVersion) {
    return badOutput("the kubeconfig asks for apiVersion " + std::string(apiVersion) +
                     ", the plugin returned " + (version.is_string() ? version.dump() : "none"));
  }
  if (!credential.contains("kind") || credential["kind"] != "ExecCredential") {
    return badOutput("kind is " +
                     (credential.contains("kind") ? credential["kind"].dump() : "absent") +
                     ", expected \"ExecCredential\"");
  }
  if (!credential.contains("status") || !credential["status"].is_object()) {
    return badOutput("no status object");
  }
  const json& status = credential["status"];
  ParsedExecCredential parsed;
  auto token = optionalString(status, "token");
  if (!token) return std::move(token).error();
  auto cert = optionalString(status, "clientCertificateData");
  if (!cert) return std::move(cert).error();
  auto key = optionalString(status, "clientKeyData");
  if (!key) return std::move(key).error();
  auto expiry = optionalString(status, "expirationTimestamp");
  if (!expiry) return std::move(expiry).error();
  if (token->empty() && cert->empty() && key->empty()) {
    return badOutput("status has neither a token nor clientCertificateData and clientKeyData");
  }
  if (cert->empty() != key->empty()) {
    return badOutput(std::string("status has ") +
                     (cert->empty() ? "clientKeyData" : "clientCertificateData") + " without " +
                     (cert->empty() ? "clientCertificateData" : "clientKeyData"));
  }
  if (token->find_first_of("\r\n") != std::string::npos) {
    return badOutput("status.token contains a line break");
  }
  if (!expiry->empty()) {
    parsed.expiry = parseRfc3339(*expiry);
    if (!parsed.expiry) {
      return badOutput("status.expirationTimestamp " + quoteJsonString(*expiry) +
                       " is not an RFC 3339 time");
    }
  }
  parsed.token = std::move(*token);
  parsed.clientCertificatePem = std::move(*cert);
  parsed.clientKeyPem = std::move(*key);
  return parsed;
}

std::string execInfoJson(const ExecPluginConfig& plugin, const ExecClusterInfo& cluster,
                         bool interactive) {
  json info = {{"kind", "ExecCredential"},
               {"apiVersion", plugin.apiVersion},
               {"spec", {{"interactive", interactive}}}};
  if (plugin.provideClusterInfo) {
    json& out = info["spec"]["cluster"];
    out["server"] = cluster.server;
    if (!cluster.tlsServerName.empty()) out["tls-server-name"] = cluster.tlsServerName;
    if (cluster.insecureSkipTlsVerify) out["insecure-skip-tls-verify"] = true;
    if (!cluster.certificateAuthorityData.empty()) {
      out["certificate-authority-data"] = encodeBase64(cluster.certificateAuthorityData);
    }
    if (!cluster.proxyUrl.empty()) out["proxy-url"] = cluster.proxyUrl;
    if (!cluster.config.is_null()) out["config"] = cluster.config;
  }
  return info.dump();
}

Result<std::shared_ptr<ExecCredentialSource>> ExecCredentialSource::create(
    ExecPluginConfig plugin, ExecClusterInfo cluster, Clock now,
    std::optional<bool> stdinIsTerminal) {
  const std::string where = "user " + quoteJsonString(plugin.user) + ": exec";
  if (plugin.command.empty()) {
    return makeError(ErrorCode::kInvalidArgument, where + ": command must be set");
  }
  if (plugin.apiVersion != kV1 && plugin.apiVersion != kV1beta1) {
    return makeError(ErrorCode::kInvalidArgument,
                     where + ": apiVersion " + quoteJsonString(plugin.apiVersion) +
                         " is not supported (expected " + std::string(kV1) + " or " +
                         std::string(kV1beta1) + ")");
  }
  // As client-go's defaults: v1 must say, v1beta1 predates the field.
  if (plugin.interactiveMode.empty() && plugin.apiVersion == kV1beta1) {
    plugin.interactiveMode = "IfAvailable";
  }
  const bool terminal = stdinIsTerminal.value_or(::isatty(STDIN_FILENO) == 1);
  bool interactive = false;
  if (plugin.interactiveMode == "Never") {
    interactive = false;
  } else if (plugin.interactiveMode == "IfAvailable") {
    interactive = terminal;
  } else if (plugin.interactiveMode == "Always") {
    if (!terminal) {
      return makeError(ErrorCode::kFailedPrecondition,
                       where + ": interactiveMode is Always but standard input is not a terminal");
    }
    interactive = true;
  } else if (plugin.interactiveMode.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     where + ": interactiveMode must be set (Never, IfAvailable or Always) with " +
                         std::string(kV1));
  } else {
    return makeError(ErrorCode::kInvalidArgument, where + ": interactiveMode " +
                                                      quoteJsonString(plugin.interactiveMode) +
                                                      " is not Never, IfAvailable or Always");
  }
  return std::make_shared<ExecCredentialSource>(Checked(), std::move(plugin), std::move(cluster),
                                                std::move(now), interactive);
}

ExecCredentialSource::ExecCredentialSource(Checked, ExecPluginConfig plugin,
                                           ExecClusterInfo cluster, Clock now, bool interactive)
    : plugin_(std::move(plugin)),
      cluster_(std::move(cluster)),
      now_(std::move(now)),
      interactive_(interactive) {}

Result<std::shared_ptr<const ExecCredential>> ExecCredentialSource::current() {
  std::lock_guard lock(mutex_);
  // Expired means past the time, as client-go checks it: a plugin's own margin is its business.
  if (cached_ && (!cached_->expiry || now_() < *cached_->expiry)) return cached_;
  return runPluginLocked();
}

void ExecCredentialSource::unauthorized(const std::shared_ptr<const ExecCredential>& used) {
  std::lock_guard lock(mutex_);
  if (cached_ == used) cached_.reset();
}

Result<std::shared_ptr<const ExecCredential>> ExecCredentialSource::runPluginLocked() {
  const std::string where = "getting credentials for user " + quoteJsonString(plugin_.user) +
                            " from exec plugin " + quoteJsonString(plugin_.command);
  ProcessSpec spec;
  spec.argv.push_back(plugin_.command);
  spec.argv.insert(spec.argv.end(), plugin_.args.begin(), plugin_.args.end());
  spec.env = currentEnvironment();
  for (const auto& [name, value] : plugin_.env)
    spec.env.push_back(name + "=" + value);
  spec.env.push_back("KUBERNETES_EXEC_INFO=" + execInfoJson(plugin_, cluster_, interactive_));
  // An interactive plugin prompts on stderr and reads the answer from stdin.
  spec.inheritStdin = interactive_;
  spec.inheritStderr = interactive_;
  auto ran = runProcess(spec);
  if (!ran) {
    if (ran.error().code != ErrorCode::kNotFound) return std::move(ran).error().withContext(where);
    std::string message = where + ": executable " + quoteJsonString(plugin_.command) +
                          " not found (" + ran.error().message + ")";
    if (!plugin_.installHint.empty()) message += "\n\n" + plugin_.installHint;
    return makeError(ErrorCode::kFailedPrecondition, message);
  }
  // What the plugin said on stderr is the user's to see, on success too (warnings).
  if (ran->exitCode != 0) {
    std::string message =
        where + ": " +
        (ran->termSignal != 0 ? "killed by signal " + std::to_string(ran->termSignal)
                              : "exited with code " + std::to_string(ran->exitCode));
    if (interactive_) {
      message += " (its messages are above)";
    } else if (const std::string said = lastPart(ran->err); !said.empty()) {
      message += "; it said:\n" + said;
    }
    return makeError(ErrorCode::kPermissionDenied, message);
  }
  if (!ran->err.empty()) std::fputs(ran->err.c_str(), stderr);
  auto parsed = parseExecCredential(ran->out, plugin_.apiVersion);
  if (!parsed) return std::move(parsed).error().withContext(where);
  auto credential = std::make_shared<ExecCredential>();
  credential->token = std::move(parsed->token);
  credential->expiry = parsed->expiry;
  if (!parsed->clientCertificatePem.empty()) {
    auto dir = TempDir::create("torus-exec-credential");
    if (!dir) return std::move(dir).error().withContext(where);
    ::chmod(dir->path().c_str(), 0700);
    credential->files = std::make_shared<TempDir>(std::move(*dir));
    auto cert = writePrivately(*credential->files, "client.crt", parsed->clientCertificatePem);
    if (!cert) return std::move(cert).error().withContext(where);
    auto key = writePrivately(*credential->files, "client.key", parsed->clientKeyPem);
    if (!key) return std::move(key).error().withContext(where);
    credential->clientCertFile = std::move(*cert);
    credential->clientKeyFile = std::move(*key);
  }
  cached_ = std::move(credential);
  return cached_;
}

}  // namespace torus::kube
