#include "node-runtime/cli/neuron_cc_bench/bench_config.h"

#include <cstdio>
#include <cstdlib>
#include <random>

#include "common/base/parse.h"
#include "common/config/log_settings.h"

namespace torus::cli {
namespace {

template <typename T, typename Parse>
config::Setting choice(std::string flag, std::string valueName, std::string defaultText,
                       std::string help, T* target, Parse parse) {
  return {std::move(flag),
          "",
          "",
          std::move(valueName),
          std::move(defaultText),
          std::move(help),
          [target, parse](std::string_view value) -> Result<void> {
            auto parsed = parse(value);
            if (!parsed) return std::move(parsed).error();
            *target = *parsed;
            return okResult();
          }};
}

Error bad(const std::string& message) {
  return makeError(ErrorCode::kInvalidArgument, message);
}

std::string madeUpSecret() {
  std::random_device random;
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%08x%08x%08x%08x", random(), random(), random(), random());
  return hex;
}

}  // namespace

Result<std::size_t> parseBytes(std::string_view text) {
  std::uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k':
        scale = 1ULL << 10;
        break;
      case 'M':
      case 'm':
        scale = 1ULL << 20;
        break;
      case 'G':
      case 'g':
        scale = 1ULL << 30;
        break;
      default:
        break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  auto value = parseInt64(text, 0, std::int64_t{1} << 40);
  if (!value) return std::move(value).error();
  return static_cast<std::size_t>(*value) * scale;
}

void registerBenchSettings(config::SettingTable& table, BenchConfig* config) {
  table.add(choice("op", "OP", "allreduce",
                   "allreduce, allgather, reducescatter, alltoall, broadcast, reduce or sendrecv",
                   &config->bench.op, parseBenchOp));
  table.addInt("ranks", "", "", "N", "ranks to fork on this host", 1, 64, &config->ranks);
  table.addInt("world-size", "", "", "N", "ranks in the whole world (default: --ranks)", 1, 4096,
               &config->worldSize);
  table.addInt("first-rank", "", "", "R", "world rank of this run's first rank (0 binds the root)",
               0, 4095, &config->firstRank);
  table.addInt("hosts", "", "", "K", "split this run's ranks into K pretend hosts", 1, 64,
               &config->hosts);
  table.addString("host-id", "TORUS_COLL_HOST_ID", "", "ID",
                  "ranks with the same id share memory (default: machine and IPC namespace)",
                  &config->hostId);
  table.addString("min-bytes", "", "", "BYTES", "smallest size (suffix K, M, G allowed)",
                  &config->minBytes);
  table.addString("max-bytes", "", "", "BYTES", "largest size; sizes double up to it",
                  &config->maxBytes);
  table.add(choice("dtype", "TYPE", "f32", "f32, f64, f16, bf16, i8, u8, i32 or i64",
                   &config->bench.type, coll::parseDataType));
  table.add(choice("redop", "OP", "sum", "reduction: sum, prod, max or min",
                   &config->bench.reduceOp, coll::parseReduceOp));
  table.addInt("iters", "", "", "K", "timed iterations per size", 1, 1000000, &config->bench.iters);
  table.addInt("warmup", "", "", "W", "untimed iterations per size", 0, 1000000,
               &config->bench.warmup);
  table.addSwitch("check", "", "", "verify the data of one extra run per size",
                  &config->bench.check);
  table.addString("buffers", "", "", "KIND",
                  "runtime (tensors the runtime owns, in shared memory: no staging copy) or user "
                  "(plain heap buffers, staged)",
                  &config->buffers);
  table.addSwitch("in-place", "", "", "run in place (output overwrites input)",
                  &config->bench.inPlace);
  table.addSwitch("json", "", "", "one JSON object per size instead of a table",
                  &config->bench.json);
  table.add(choice("transport", "NAME", "auto",
                   "auto (shared memory within a host, libfabric between), shm, or ofi (libfabric "
                   "for every rank; the provider follows FI_PROVIDER, FI_TCP_IFACE pins tcp)",
                   &config->transport, coll::parseTransport));
  config::Setting registration = choice(
      "ofi-register", "MODE", "auto",
      "auto (register buffers with libfabric when the provider asks) or always (as efa needs; "
      "tries that path on tcp)",
      &config->ofiRegisterAlways, coll::parseOfiRegister);
  registration.env = "TORUS_COLL_OFI_REGISTER";
  table.add(std::move(registration));
  table.addString("root-address", "NEURON_RT_ROOT_COMM_ID", "", "HOST:PORT",
                  "bootstrap address of rank 0; port 0 picks a free one", &config->rootAddress);
  table.add(choice("algorithm", "MODE", "auto",
                   "auto, direct (no control slots), ring or doubling (libfabric AllReduce), "
                   "flat (no hierarchical AllReduce across hosts)",
                   &config->algorithm, coll::parseAlgorithm));
  table.addDurationMillis("timeout", "TORUS_COLL_TIMEOUT_MS", "",
                          "bound on every wait (e.g. 30s, 5m)", &config->timeoutMs);
  config::addLogSettings(table, &config->log);
}

Result<void> finishBenchConfig(BenchConfig& config) {
  auto minBytes = parseBytes(config.minBytes);
  if (!minBytes) return bad("--min-bytes: " + minBytes.error().message);
  auto maxBytes = parseBytes(config.maxBytes);
  if (!maxBytes) return bad("--max-bytes: " + maxBytes.error().message);
  if (*minBytes > *maxBytes) {
    return bad("--min-bytes " + config.minBytes + " is larger than --max-bytes " + config.maxBytes);
  }
  config.bench.minBytes = *minBytes;
  config.bench.maxBytes = *maxBytes;
  if (config.buffers != "runtime" && config.buffers != "user") {
    return bad("--buffers: expected runtime or user, got \"" + config.buffers + "\"");
  }
  config.bench.runtimeBuffers = config.buffers == "runtime";
  if (config.worldSize == 0) config.worldSize = config.firstRank + config.ranks;
  if (config.firstRank + config.ranks > config.worldSize) {
    return bad("--first-rank " + std::to_string(config.firstRank) + " + --ranks " +
               std::to_string(config.ranks) + " is more than --world-size " +
               std::to_string(config.worldSize));
  }
  if (config.firstRank > 0 && config.rootAddress.ends_with(":0")) {
    return bad("--first-rank " + std::to_string(config.firstRank) +
               " joins an existing root: give its --root-address with the port");
  }
  // Every pretend host gets the same number of ranks; --hosts 3 --ranks 2 used to run 2 hosts.
  if (config.hosts > 1 && config.ranks % config.hosts != 0) {
    return bad("--hosts " + std::to_string(config.hosts) + " does not split --ranks " +
               std::to_string(config.ranks) + " into hosts of equal size");
  }
  if (config.bench.op == BenchOp::kSendRecv && config.worldSize < 2) {
    return bad("--op sendrecv needs --ranks 2 or more");
  }
  if (config.bench.op == BenchOp::kSendRecv && config.bench.inPlace) {
    // A rank that receives first would overwrite what it still has to send.
    return bad("--op sendrecv has no in-place form");
  }
  // The bootstrap proves each rank belongs to this run. Ranks started elsewhere (--first-rank)
  // must be given the secret: it comes from the environment, never the command line (ps shows
  // that to everyone).
  if (const char* secret = std::getenv("TORUS_COLL_JOB_SECRET"); secret != nullptr && *secret) {
    config.jobSecret = secret;
  } else if (config.firstRank == 0 && config.ranks == config.worldSize) {
    config.jobSecret = madeUpSecret();
  }
  return {};
}

}  // namespace torus::cli
