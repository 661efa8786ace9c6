// The bootstrap's wire format: the lines ranks and the root exchange when a communicator is
// created, written and parsed here and nowhere else (pure: no sockets, no clock), so the parser can
// be fuzzed and every refusal names what was wrong.
//
//   rank -> root   TORUS-COLL/1 <rank> <size> <pid> <host-id> <machine-id> [<proof>]
//   root -> rank   OK <session> [<proof>]          then one line per rank: <pid> <host-id>
//   <machine-id>
//                  ERR <why>                       (the root gave up; <why> names who is missing)
//
// With a job secret (TORUS_COLL_JOB_SECRET, the same for every rank of a job) each side proves it
// knows the secret: <proof> is HMAC-SHA256(secret, the message without the proof), in hex. A root
// ignores a hello without a valid proof (a forged line must not fail the whole job),
// and a rank refuses a root whose answer does not prove it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace torus::coll {

struct RankInfo {
  int pid = 0;
  std::string hostId;     // equal strings mean "shares memory" (see localHostId)
  std::string machineId;  // hostname + kernel boot id: which ranks share CPUs
};

struct Hello {
  int rank = 0;
  int size = 1;
  RankInfo info;
  bool proven = false;  // parsed: carried a proof that matched the secret
};

// The largest world the wire accepts (far above any real job; bounds what a line can ask for).
inline constexpr int kMaxWorld = 1 << 16;

std::string helloLine(const Hello& hello, std::string_view secret);  // ends in '\n'
// Without a secret any well-formed hello parses (a proof, if present, is not checked: the rank
// will refuse our unproven answer). With one, a hello without the right proof is an error.
Result<Hello> parseHello(std::string_view line, std::string_view secret);

struct SessionTable {
  std::uint64_t session = 0;
  std::vector<RankInfo> ranks;  // indexed by rank
};

std::string sessionReply(const SessionTable& table, std::string_view secret);  // every line

struct ReplyHead {
  bool gaveUp = false;
  std::string why;  // when the root gave up
  std::uint64_t session = 0;
  std::string proof;  // "" when the root sent none
};
Result<ReplyHead> parseReplyHead(std::string_view line);
Result<RankInfo> parseRankRow(std::string_view line);
// Checks the root's proof over the table it sent; always fine without a secret.
Result<void> verifyReply(const SessionTable& table, std::string_view proof,
                         std::string_view secret);

}  // namespace torus::coll
