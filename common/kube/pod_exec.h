// execInPod: runs one command in a pod's container through the API server's `pods/exec`
// subresource, as `kubectl exec` (1.30 and later) does: a WebSocket upgrade offering
// v5.channel.k8s.io with v4.channel.k8s.io as the fallback, no stdin, no tty. Returns the
// command's stdout, stderr and exit code once the status message has arrived and the server has
// ended the stream, or stayed silent for a second after the status (the exchange is complete then;
// a server that never closes does not cost the whole timeout).
//
// Owns: the Kubernetes side: the exec URL, the subprotocols, the channels, the status, the
// output limit, the 401 retry and the error mapping. Does not own: the connection, TLS and
// WebSocket framing (WebSocketConnection in websocket_client.h), retries, streaming output as it
// arrives, stdin or terminal resizing (nothing in Torus needs them), nor the other REST calls
// (KubeClient).
//
// One call is one connection with one deadline (request.timeout) that bounds everything but the
// host-name lookup: connect, TLS handshake, upgrade, every read and write. Nothing throws.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/kube/kube_config.h"

namespace torus::kube {

struct ExecOutput {
  std::string out;   // the command's stdout (channel 1)
  std::string err;   // its stderr (channel 2)
  int exitCode = 0;  // from the status channel: 0 on Success, the ExitCode cause on NonZeroExitCode
  std::string protocol;  // the subprotocol the server chose: v5.channel.k8s.io or v4.channel.k8s.io
};

struct ExecRequest {
  std::string nameSpace, pod, container;  // an empty container: the pod's default one
  std::vector<std::string>
      command;  // argv, each sent as a `command=` query parameter (URL-escaped)
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};  // whole exchange, connect to close
  std::size_t maxOutputBytes = 64 << 20;  // stdout+stderr beyond this: an error, connection closed
};

// Errors, each prefixed with "exec in NS/POD[/CONTAINER]":
// - the upgrade refused: the HTTP status and the API server's Status message, with the codes
//   KubeClient uses (401/403 PermissionDenied, 404 NotFound, 400/422 InvalidArgument, 429/5xx
//   Unavailable). A 401 with a token file re-reads the token and tries once more.
// - the command could not run (a Failure status other than NonZeroExitCode, such as an executable
//   missing from the container): FailedPrecondition with the server's message.
// - transport and TLS failures, or the stream ending without an exit status: Unavailable.
// - the deadline: DeadlineExceeded. Output over maxOutputBytes: ResourceExhausted.
// - a protocol violation (bad Sec-WebSocket-Accept, no offered subprotocol chosen, a masked or
//   oversized server frame, an unknown channel, a malformed status): Internal.
// A command that ran and exited non-zero is not an error: its ExecOutput carries the exit code.
Result<ExecOutput> execInPod(const KubeConfig& config, const ExecRequest& request);

}  // namespace torus::kube
