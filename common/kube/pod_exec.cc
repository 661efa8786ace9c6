#include "common/kube/pod_exec.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/kube/byte_stream.h"
#include "common/kube/kube_client.h"
#include "common/kube/object_fields.h"
#include "common/kube/websocket_client.h"

namespace torus::kube {
namespace {

using Clock = WebSocketConnection::Clock;
using nlohmann::json;

constexpr std::string_view kV5 = "v5.channel.k8s.io";
constexpr std::string_view kV4 = "v4.channel.k8s.io";
// After the status the exchange is complete; an API server (or a proxy in front of it) that does
// not close the connection gets this long, not the rest of the timeout.
constexpr auto kCloseGrace = std::chrono::seconds(1);
constexpr std::uint16_t kNormalClosure = 1000;  // RFC 6455 7.4.1

Error protocolError(const std::string& what) {
  return makeError(ErrorCode::kInternal, "protocol violation: " + what);
}

// As KubeClient's statusError: the HTTP status mapped to our codes, with the Status message.
Error refusalError(int status, const std::string& body) {
  std::string message = "the API server refused the upgrade: HTTP " + std::to_string(status);
  const json parsed = json::parse(body, nullptr, false);
  if (const std::string text = stringAt(parsed, {"message"}); !text.empty()) {
    message += ": " + text;
  } else if (!body.empty() && !parsed.is_object()) {
    message += ": " + quoteJsonString(clipForMessage(body, 256));
  }
  return makeError(errorCodeOfStatus(status), message);
}

// The status channel's metav1.Status: Success, or a Failure whose reason NonZeroExitCode names
// the exit code in a cause. Any other Failure means the command did not run.
Result<int> exitCodeFrom(std::string_view text) {
  const json status = json::parse(text, nullptr, false);
  if (!status.is_object()) {
    return protocolError("the status channel carried " + quoteJsonString(clipForMessage(text)));
  }
  const std::string state = stringAt(status, {"status"});
  if (state == "Success") return 0;
  if (state != "Failure") {
    return protocolError("status " + quoteJsonString(state) + ", expected Success or Failure");
  }
  const std::string reason = stringAt(status, {"reason"});
  if (reason != "NonZeroExitCode") {
    const std::string message = stringAt(status, {"message"});
    return makeError(ErrorCode::kFailedPrecondition,
                     "the command did not run: " + (message.empty() ? reason : message));
  }
  for (const json& cause : arrayAt(status, {"details", "causes"})) {
    if (stringAt(cause, {"reason"}) != "ExitCode") continue;
    const std::string value = stringAt(cause, {"message"});
    int code = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), code);
    if (error != std::errc() || end != value.data() + value.size()) {
      return protocolError("exit code " + quoteJsonString(value) + " is not an integer");
    }
    return code;
  }
  return protocolError("NonZeroExitCode without an ExitCode cause: " +
                       quoteJsonString(clipForMessage(text)));
}

struct Streams {
  ExecOutput output;
  std::optional<Result<int>> exitCode;  // the first status message's
  std::size_t maxOutputBytes = 0;
};

// One reassembled data message: its first byte names the channel.
Result<void> takeMessage(std::string_view message, Streams& streams) {
  if (message.empty()) return okResult();  // not even a channel: nothing to take
  const auto channel = static_cast<unsigned char>(message[0]);
  message.remove_prefix(1);
  ExecOutput& output = streams.output;
  switch (channel) {
    case 1:
    case 2:
      if (output.out.size() + output.err.size() + message.size() > streams.maxOutputBytes) {
        return makeError(ErrorCode::kResourceExhausted,
                         "the command's stdout and stderr passed the limit of " +
                             std::to_string(streams.maxOutputBytes) + " bytes");
      }
      (channel == 1 ? output.out : output.err).append(message);
      return okResult();
    case 3:
      if (!streams.exitCode) streams.exitCode = exitCodeFrom(message);
      return okResult();
    case 4:  // resize: only with a tty
      return okResult();
    case 255:  // v5: the server closed one channel; the status or the close frame ends it all
      if (output.protocol == kV5) return okResult();
      break;
    default:
      break;
  }
  return protocolError("a message on unknown channel " + std::to_string(channel));
}

// Data messages until the stream ends. The status message (channel 3) completes the exchange: the
// server's close, its close frame or kCloseGrace of silence after it ends the reading.
Result<ExecOutput> readStreams(WebSocketConnection& connection, Streams streams,
                               Clock::time_point deadline) {
  for (;;) {
    const Clock::time_point until =
        streams.exitCode ? std::min(deadline, Clock::now() + kCloseGrace) : deadline;
    auto message = connection.readMessage(until);
    if (!message && streams.exitCode && message.error().code == ErrorCode::kDeadlineExceeded) {
      // Done with a server that keeps the connection open: say so, best effort.
      (void)connection.sendClose(kNormalClosure);
      break;
    }
    if (!message) return std::move(message).error();
    if (!*message) break;  // the server closed the connection or sent a close frame
    if (auto taken = takeMessage(**message, streams); !taken) return taken.error();
  }
  if (!streams.exitCode) {
    std::string closeNote;
    if (const auto& close = connection.closeStatus()) {
      closeNote = " (close code " + std::to_string(close->code) +
                  (close->reason.empty() ? "" : ": " + close->reason) + ")";
    }
    return makeError(ErrorCode::kUnavailable,
                     "the exec stream ended without the command's exit status" + closeNote);
  }
  if (!streams.exitCode->ok()) return streams.exitCode->error();
  streams.output.exitCode = streams.exitCode->value();
  return std::move(streams.output);
}

std::string execTarget(const ServerUrl& url, const ExecRequest& request) {
  std::string target = url.prefix + "/api/v1/namespaces/" + percentEncoded(request.nameSpace) +
                       "/pods/" + percentEncoded(request.pod) + "/exec?";
  for (const std::string& argument : request.command) {
    target += "command=" + percentEncoded(argument) + "&";
  }
  if (!request.container.empty()) target += "container=" + percentEncoded(request.container) + "&";
  return target + "stdout=true&stderr=true";
}

TlsOptions tlsOf(const KubeConfig& config, const RequestCredentials& credentials) {
  return {config.caFile, credentials.clientCertFile, credentials.clientKeyFile,
          config.insecureSkipTlsVerify};
}

// One connection: upgrade, then the streams until the exchange is complete.
Result<ExecOutput> execOnce(const KubeConfig& config, const ServerUrl& url,
                            const ExecRequest& request, Clock::time_point deadline,
                            const RequestCredentials& credentials, int& refusedStatus) {
  auto connection =
      WebSocketConnection::open(url, tlsOf(config, credentials), deadline, request.timeout);
  if (!connection) return std::move(connection).error();
  // kubectl's order: v5 adds channel-close messages (255); v4 is what API servers before 1.30
  // speak. Both carry stdout, stderr and the status the same way.
  UpgradeRequest upgrade{execTarget(url, request), {std::string(kV5), std::string(kV4)}, {}};
  if (!credentials.token.empty()) {
    const std::string& token = credentials.token;
    // A line break would end the header and smuggle in whatever follows.
    if (token.find_first_of("\r\n") != std::string::npos) {
      return makeError(ErrorCode::kInvalidArgument, "the bearer token contains a line break");
    }
    upgrade.headers.emplace_back("Authorization", "Bearer " + token);
  }
  auto reply = connection->upgrade(upgrade);
  if (!reply) return std::move(reply).error();
  if (reply->status != 101) {
    refusedStatus = reply->status;
    return refusalError(reply->status, reply->body);
  }
  Streams streams;
  streams.output.protocol = reply->protocol;
  streams.maxOutputBytes = request.maxOutputBytes;
  connection->setActivity("waiting for the command to finish");
  return readStreams(*connection, std::move(streams), deadline);
}

}  // namespace

Result<ExecOutput> execInPod(const KubeConfig& config, const ExecRequest& request) {
  const std::string where = "exec in " + request.nameSpace + "/" + request.pod +
                            (request.container.empty() ? "" : "/" + request.container);
  if (request.nameSpace.empty() || request.pod.empty() || request.command.empty()) {
    return makeError(ErrorCode::kInvalidArgument,
                     where + ": namespace, pod and command are required");
  }
  auto url = parseServerUrl(config.server);
  if (!url) return std::move(url).error().withContext(where);
  const Clock::time_point deadline = Clock::now() + request.timeout;
  if (!config.proxyUrl.empty()) {
    return makeError(ErrorCode::kFailedPrecondition,
                     where + ": the kubeconfig's proxy-url is not supported for pods/exec");
  }
  int refusedStatus = 0;
  auto used = requestCredentials(config);
  if (!used) return std::move(used).error().withContext(where);
  auto result = execOnce(config, *url, request, deadline, *used, refusedStatus);
  // The token file or the exec plugin's credential may have rotated since it was read: get a
  // fresh one and try once more, as KubeClient does.
  if (!result && refusedStatus == 401 && refreshAfterUnauthorized(config, *used)) {
    auto fresh = requestCredentials(config);
    if (!fresh) return std::move(fresh).error().withContext(where);
    result = execOnce(config, *url, request, deadline, *fresh, refusedStatus);
  }
  if (!result) return std::move(result).error().withContext(where);
  return result;
}

}  // namespace torus::kube
