#include "common/kube/kube_client.h"

#include <cstdint>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "common/base/strings.h"
#include "common/kube/object_fields.h"

namespace torus::kube {
namespace {

using nlohmann::json;

Error statusError(int status, const std::string& method, const std::string& path,
                  const std::string& body) {
  std::string message = method + " " + path + ": HTTP " + std::to_string(status);
  const json parsed = json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    message += ": " + parsed["message"].get<std::string>();
  }
  return makeError(errorCodeOfStatus(status), message);
}

// What went wrong below HTTP, in words an operator can act on (httplib's own names are terse:
// "Connection", "SSLServerVerification").
std::string transportFailure(httplib::Error error, const std::string& server) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect to " + server + " (refused, unreachable or no route)";
    case httplib::Error::ConnectionTimeout:
      return "connecting to " + server + " timed out";
    case httplib::Error::Read:
      return "the connection to " + server + " broke or timed out while reading the reply";
    case httplib::Error::Write:
      return "the connection to " + server + " broke while sending the request";
    case httplib::Error::SSLConnection:
      return "the TLS handshake with " + server + " failed";
    case httplib::Error::SSLServerVerification:
      return server +
             "'s certificate is not signed by the kubeconfig's certificate authority "
             "(certificate-authority / certificate-authority-data)";
    case httplib::Error::SSLLoadingCerts:
      return "cannot load the certificate authority or client certificate the kubeconfig names";
    default:
      return httplib::to_string(error) + " (talking to " + server + ")";
  }
}

Result<std::string> bodyOf(const std::string& server, const std::string& method,
                           const std::string& path, const httplib::Result& reply) {
  if (!reply) {
    return makeError(ErrorCode::kUnavailable,
                     method + " " + path + ": " + transportFailure(reply.error(), server));
  }
  if (reply->status < 200 || reply->status >= 300) {
    return statusError(reply->status, method, path, reply->body);
  }
  return reply->body;
}

Result<json> parseReply(const std::string& server, const std::string& method,
                        const std::string& path, const httplib::Result& reply) {
  auto text = bodyOf(server, method, path, reply);
  if (!text) return std::move(text).error();
  json body = json::parse(*text, nullptr, false);
  if (body.is_discarded()) {
    return makeError(ErrorCode::kInternal, method + " " + path + ": the reply is not JSON");
  }
  return body;
}

}  // namespace

ErrorCode errorCodeOfStatus(int status) {
  if (status == 404) return ErrorCode::kNotFound;
  if (status == 409) return ErrorCode::kAborted;
  if (status == 410) return ErrorCode::kFailedPrecondition;
  if (status == 401 || status == 403) return ErrorCode::kPermissionDenied;
  if (status == 400 || status == 422) return ErrorCode::kInvalidArgument;
  if (status == 429 || status >= 500) return ErrorCode::kUnavailable;
  return ErrorCode::kInternal;
}

struct KubeClient::Transport {
  std::unique_ptr<httplib::Client> client;
  std::string clientCertFile;  // what `client` presents; an exec plugin may hand out new ones
  std::string clientKeyFile;
  std::chrono::milliseconds timeout;
};

namespace {

// "http://proxy.corp:3128" -> host and port; the loader accepts only http:// proxy URLs, and
// none with credentials.
std::pair<std::string, int> proxyHostPort(const std::string& url) {
  std::string rest = url.substr(std::string("http://").size());
  rest = rest.substr(0, rest.find('/'));
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || rest.back() == ']') return {rest, 80};
  return {rest.substr(0, colon), std::atoi(rest.c_str() + colon + 1)};
}

}  // namespace

void KubeClient::connect(const std::string& clientCertFile, const std::string& clientKeyFile) {
  if (!clientCertFile.empty() && !clientKeyFile.empty()) {
    transport_->client =
        std::make_unique<httplib::Client>(config_.server, clientCertFile, clientKeyFile);
  } else {
    transport_->client = std::make_unique<httplib::Client>(config_.server);
  }
  transport_->clientCertFile = clientCertFile;
  transport_->clientKeyFile = clientKeyFile;
  httplib::Client& client = *transport_->client;
  if (!config_.caFile.empty()) client.set_ca_cert_path(config_.caFile.c_str());
  client.enable_server_certificate_verification(!config_.insecureSkipTlsVerify);
  if (!config_.proxyUrl.empty()) {
    const auto [host, port] = proxyHostPort(config_.proxyUrl);
    client.set_proxy(host, port);
  }
  // As a duration: whole seconds would make a timeout under one second zero (every call fails).
  client.set_connection_timeout(transport_->timeout);
  client.set_read_timeout(transport_->timeout);
  client.set_write_timeout(transport_->timeout);
  // One TLS connection for every request of this client: a handshake costs more than most calls.
  client.set_keep_alive(true);
  // httplib sends a request's headers and body in two writes. With Nagle's algorithm on, the body
  // waits for the API server's delayed ACK of the headers, about 40 ms on every POST, PUT and
  // PATCH over a kept-alive connection. That stall capped the extender's binds.
  client.set_tcp_nodelay(true);
}

KubeClient::KubeClient(KubeConfig config, std::chrono::milliseconds timeout)
    : config_(std::move(config)), transport_(std::make_unique<Transport>()) {
  transport_->timeout = timeout;
  connect(config_.clientCertFile, config_.clientKeyFile);
}

KubeClient::~KubeClient() = default;

void KubeClient::cancel() {
  transport_->client->stop();
}

namespace {

httplib::Headers requestHeaders(const RequestCredentials& credentials) {
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", "torus/0.1"}};
  if (!credentials.token.empty()) headers.emplace("Authorization", "Bearer " + credentials.token);
  return headers;
}

}  // namespace

Result<RequestCredentials> KubeClient::credentials() {
  auto credentials = requestCredentials(config_);
  if (!credentials) return std::move(credentials).error();
  // A client certificate from an exec plugin that rotated: a new connection presents the new one.
  if (credentials->clientCertFile != transport_->clientCertFile ||
      credentials->clientKeyFile != transport_->clientKeyFile) {
    connect(credentials->clientCertFile, credentials->clientKeyFile);
  }
  return credentials;
}

// A request that could not be written is sent once more: the kept-alive connection was closed
// by the API server while idle (it closes idle connections), nothing of the request reached it,
// and httplib opens a new connection for the retry. A 401 is retried once with a fresh credential
// when there can be one: the token file rotated under us, or the exec plugin's credential was
// revoked or expired early (client-go runs the plugin again after a 401 too).
template <typename Send>
Result<httplib::Result> KubeClient::exchange(Send&& request) {
  auto used = credentials();
  if (!used) return std::move(used).error();
  httplib::Result reply = request(requestHeaders(*used));
  if (!reply && reply.error() == httplib::Error::Write) reply = request(requestHeaders(*used));
  if (reply && reply->status == 401 && refreshAfterUnauthorized(config_, *used)) {
    auto fresh = credentials();
    if (!fresh) return std::move(fresh).error();
    reply = request(requestHeaders(*fresh));
  }
  return reply;
}

template <typename Send>
Result<json> KubeClient::send(const char* method, const std::string& path, Send&& request) {
  auto reply = exchange(std::forward<Send>(request));
  if (!reply) return std::move(reply).error().withContext(std::string(method) + " " + path);
  return parseReply(config_.server, method, path, *reply);
}

Result<json> KubeClient::get(const std::string& path) {
  return send("GET", path, [&](const httplib::Headers& headers) {
    return transport_->client->Get(path, headers);
  });
}

Result<std::string> KubeClient::getText(const std::string& path) {
  const auto request = [&](httplib::Headers headers) {
    headers.erase("Accept");
    headers.emplace("Accept", "text/plain, */*");
    return transport_->client->Get(path, headers);
  };
  auto reply = exchange(request);
  if (!reply) return std::move(reply).error().withContext("GET " + path);
  return bodyOf(config_.server, "GET", path, *reply);
}

Result<json> KubeClient::create(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return send("POST", path, [&](const httplib::Headers& headers) {
    return transport_->client->Post(path, headers, text, "application/json");
  });
}

Result<json> KubeClient::replace(const std::string& path, const json& body) {
  const std::string text = body.dump();
  return send("PUT", path, [&](const httplib::Headers& headers) {
    return transport_->client->Put(path, headers, text, "application/json");
  });
}

Result<json> KubeClient::remove(const std::string& path) {
  return send("DELETE", path, [&](const httplib::Headers& headers) {
    return transport_->client->Delete(path, headers);
  });
}

Result<json> KubeClient::remove(const std::string& path, const json& deleteOptions) {
  const std::string text = deleteOptions.dump();
  return send("DELETE", path, [&](const httplib::Headers& headers) {
    return transport_->client->Delete(path, headers, text, "application/json");
  });
}

Result<json> KubeClient::mergePatch(const std::string& path, const json& patch) {
  const std::string text = patch.dump();
  return send("PATCH", path, [&](const httplib::Headers& headers) {
    return transport_->client->Patch(path, headers, text, "application/merge-patch+json");
  });
}

Result<json> KubeClient::strategicMergePatch(const std::string& path, const json& patch) {
  const std::string text = patch.dump();
  return send("PATCH", path, [&](const httplib::Headers& headers) {
    return transport_->client->Patch(path, headers, text, "application/strategic-merge-patch+json");
  });
}

Result<void> KubeClient::watch(const std::string& path, const std::string& resourceVersion,
                               const std::function<void(const WatchEvent&)>& onEvent,
                               std::stop_token stop) {
  const std::string target = path + (path.find('?') == std::string::npos ? "?" : "&") +
                             "watch=1&allowWatchBookmarks=true&resourceVersion=" + resourceVersion;
  std::string pending;
  std::optional<Error> failure;
  int status = 0;
  std::string errorBody;
  auto used = credentials();
  if (!used) return std::move(used).error().withContext("WATCH " + path);
  auto reply = transport_->client->Get(
      target, requestHeaders(*used),
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, std::size_t length) {
        if (status < 200 || status >= 300) {
          errorBody.append(data, length);
          return true;
        }
        pending.append(data, length);
        for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
          const std::string line = pending.substr(0, newline);
          pending.erase(0, newline + 1);
          if (trim(line).empty()) continue;
          json event = json::parse(line, nullptr, false);
          if (!event.is_object() || !event.contains("type") || !event["type"].is_string()) {
            failure = makeError(ErrorCode::kInternal, "watch " + path + ": malformed event " +
                                                          quoteJsonString(clipForMessage(line)));
            return false;
          }
          const std::string type = event["type"].get<std::string>();
          if (type == "ERROR") {
            const json& object = event["object"];
            // A Status object; a code of the wrong type (or too large) is no code, not a throw.
            const json& codeField = fieldAt(object, {"code"});
            const int code = codeField.is_number_integer() && codeField.get<std::int64_t>() > 0 &&
                                     codeField.get<std::int64_t>() < 1000
                                 ? static_cast<int>(codeField.get<std::int64_t>())
                                 : 0;
            failure = statusError(code == 0 ? 500 : code, "WATCH", path, object.dump());
            return false;
          }
          onEvent({type, std::make_shared<const json>(std::move(event["object"]))});
        }
        return !stop.stop_requested();
      });
  if (failure) return *failure;
  if (status != 0 && (status < 200 || status >= 300)) {
    // The caller's next list or watch gets a fresh credential.
    if (status == 401) refreshAfterUnauthorized(config_, *used);
    return statusError(status, "WATCH", path, errorBody);
  }
  if (!reply && !stop.stop_requested() && reply.error() != httplib::Error::Canceled) {
    return makeError(ErrorCode::kUnavailable,
                     "WATCH " + path + ": " + transportFailure(reply.error(), config_.server));
  }
  return okResult();
}

json annotationPatch(const std::string& key, const std::optional<std::string>& value) {
  json patch;
  patch["metadata"]["annotations"][key] = value ? json(*value) : json(nullptr);
  return patch;
}

}  // namespace torus::kube
