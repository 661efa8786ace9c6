#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/base/parse.h"
#include "common/base/strings.h"

namespace torus::coll {
namespace {

constexpr std::string_view kHello = "TORUS-COLL/1";
constexpr std::size_t kMaxIdLength = 512;

Error bad(std::string_view what, std::string_view line) {
  return makeError(ErrorCode::kInvalidArgument,
                   std::string(what) + " in \"" + std::string(clipForMessage(line)) + "\"");
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= line.size()) {
    const std::size_t space = line.find(' ', start);
    const std::size_t end = space == std::string_view::npos ? line.size() : space;
    out.push_back(line.substr(start, end - start));
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  return out;
}

// Host and machine ids are single tokens: no spaces or control characters.
bool validId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (const char c : id) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') return false;
  }
  return true;
}

std::string proofOf(std::string_view secret, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  ::HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

bool proofMatches(std::string_view secret, std::string_view message, std::string_view proof) {
  const std::string expected = proofOf(secret, message);
  return proof.size() == expected.size() &&
         ::CRYPTO_memcmp(proof.data(), expected.data(), expected.size()) == 0;
}

// Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict) on "literal" + std::string&&.
std::string headOf(const SessionTable& table) {
  std::string head = "OK ";
  head += std::to_string(table.session);
  return head;
}

std::string rankRow(const RankInfo& info) {
  return std::to_string(info.pid) + " " + info.hostId + " " + info.machineId + "\n";
}

}  // namespace

std::string helloLine(const Hello& hello, std::string_view secret) {
  std::string line = std::string(kHello) + " " + std::to_string(hello.rank) + " " +
                     std::to_string(hello.size) + " " + std::to_string(hello.info.pid) + " " +
                     hello.info.hostId + " " + hello.info.machineId;
  if (!secret.empty()) {
    const std::string proof = proofOf(secret, line);
    line += ' ';
    line += proof;
  }
  line += '\n';
  return line;
}

Result<Hello> parseHello(std::string_view line, std::string_view secret) {
  const std::vector<std::string_view> parts = fields(line);
  if (parts.empty() || parts[0] != kHello) return bad("not a rank's hello", line);
  if (parts.size() != 6 && parts.size() != 7) {
    return bad("a hello has 6 or 7 fields, this has " + std::to_string(parts.size()), line);
  }
  Hello hello;
  auto size = parseInt(parts[2], 1, kMaxWorld);
  if (!size) return bad("world size: " + size.error().message, line);
  auto rank = parseInt(parts[1], 0, kMaxWorld - 1);
  if (!rank) return bad("rank: " + rank.error().message, line);
  auto pid = parseInt(parts[3], 1, 1 << 30);
  if (!pid) return bad("pid: " + pid.error().message, line);
  if (!validId(parts[4])) return bad("host id is not one printable token", line);
  if (!validId(parts[5])) return bad("machine id is not one printable token", line);
  hello.rank = *rank;
  hello.size = *size;
  hello.info = RankInfo{*pid, std::string(parts[4]), std::string(parts[5])};
  if (!secret.empty()) {
    if (parts.size() != 7) {
      return makeError(ErrorCode::kPermissionDenied,
                       "a hello without the job secret's proof (rank " + std::to_string(*rank) +
                           ", pid " + std::to_string(*pid) +
                           "; is TORUS_COLL_JOB_SECRET set for every rank?)");
    }
    const std::size_t proofAt = line.size() - parts[6].size() - 1;
    if (!proofMatches(secret, line.substr(0, proofAt), parts[6])) {
      return makeError(ErrorCode::kPermissionDenied,
                       "a hello whose proof does not match the job secret (claims rank " +
                           std::to_string(*rank) + ", pid " + std::to_string(*pid) + ")");
    }
    hello.proven = true;
  }
  return hello;
}

std::string sessionReply(const SessionTable& table, std::string_view secret) {
  std::string rows;
  for (const RankInfo& info : table.ranks)
    rows += rankRow(info);
  std::string head = headOf(table);
  if (!secret.empty()) {
    const std::string proof = proofOf(secret, head + "\n" + rows);
    head += ' ';
    head += proof;
  }
  head += '\n';
  head += rows;
  return head;
}

Result<ReplyHead> parseReplyHead(std::string_view line) {
  ReplyHead head;
  if (line.starts_with("ERR ")) {
    head.gaveUp = true;
    head.why = std::string(line.substr(4));
    return head;
  }
  const std::vector<std::string_view> parts = fields(line);
  if (parts.size() < 2 || parts.size() > 3 || parts[0] != "OK") {
    return bad("unexpected answer from root rank 0", line);
  }
  auto session = parseUint64(parts[1]);
  if (!session || *session == 0) return bad("session id", line);
  head.session = *session;
  if (parts.size() == 3) head.proof = std::string(parts[2]);
  return head;
}

Result<RankInfo> parseRankRow(std::string_view line) {
  const std::vector<std::string_view> parts = fields(line);
  if (parts.size() != 3) return bad("a rank table line has 3 fields", line);
  auto pid = parseInt(parts[0], 1, 1 << 30);
  if (!pid) return bad("pid: " + pid.error().message, line);
  if (!validId(parts[1]) || !validId(parts[2])) return bad("ids are single tokens", line);
  return RankInfo{*pid, std::string(parts[1]), std::string(parts[2])};
}

Result<void> verifyReply(const SessionTable& table, std::string_view proof,
                         std::string_view secret) {
  if (secret.empty()) return okResult();
  std::string rows;
  for (const RankInfo& info : table.ranks)
    rows += rankRow(info);
  const std::string head = headOf(table);
  if (proof.empty()) {
    return makeError(ErrorCode::kPermissionDenied,
                     "root rank 0 answered without the job secret's proof (is "
                     "TORUS_COLL_JOB_SECRET set for every rank?)");
  }
  if (!proofMatches(secret, head + "\n" + rows, proof)) {
    return makeError(ErrorCode::kPermissionDenied,
                     "root rank 0's answer does not prove the job secret: not our job's root");
  }
  return okResult();
}

}  // namespace torus::coll
