// The collectives bootstrap's lines, as anything that reaches rank 0's port (or poses as it) can
// send them: a hello, the root's answer head and a rank-table row. Parsing never crashes; a hello
// that parses is written back to the same fields, and with a secret only a proven hello parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torus::coll;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  for (const std::string_view secret : {std::string_view(), std::string_view("job-secret")}) {
    auto hello = parseHello(line, secret);
    if (!hello) continue;
    if (!secret.empty() && !hello->proven) std::abort();
    std::string again = helloLine(*hello, secret);
    again.pop_back();
    auto reparsed = parseHello(again, secret);
    if (!reparsed || reparsed->rank != hello->rank || reparsed->size != hello->size ||
        reparsed->info.pid != hello->info.pid || reparsed->info.hostId != hello->info.hostId ||
        reparsed->info.machineId != hello->info.machineId) {
      std::abort();
    }
  }
  if (auto head = parseReplyHead(line); head && !head->gaveUp) {
    SessionTable table{head->session, {}};
    if (auto row = parseRankRow(line)) table.ranks.push_back(*row);
    (void)verifyReply(table, head->proof, "job-secret");
    if (!verifyReply(table, head->proof, "")) std::abort();  // no secret: nothing to prove
  }
  (void)parseRankRow(line);
  return 0;
}
