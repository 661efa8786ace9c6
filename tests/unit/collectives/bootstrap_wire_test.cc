#include "node-runtime/collectives/bootstrap/bootstrap_wire.h"

#include <gtest/gtest.h>

namespace torus::coll {
namespace {

const Hello kRank3{3, 8, RankInfo{4242, "host-a/boot/ipc:[1]", "host-a/boot"}, false};

TEST(BootstrapWire, HelloRoundTripsWithAndWithoutASecret) {
  for (const std::string secret : {"", "s3cret"}) {
    std::string line = helloLine(kRank3, secret);
    ASSERT_EQ(line.back(), '\n');
    line.pop_back();
    auto parsed = parseHello(line, secret);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->rank, 3);
    EXPECT_EQ(parsed->size, 8);
    EXPECT_EQ(parsed->info.pid, 4242);
    EXPECT_EQ(parsed->info.hostId, "host-a/boot/ipc:[1]");
    EXPECT_EQ(parsed->info.machineId, "host-a/boot");
    EXPECT_EQ(parsed->proven, !secret.empty());
  }
}

TEST(BootstrapWire, ASecretRefusesHellosWithoutItsProof) {
  std::string forged = "TORUS-COLL/1 1 4 4242 h m";  // a hello without a proof
  EXPECT_TRUE(parseHello(forged, "").ok());
  auto refused = parseHello(forged, "s3cret");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("TORUS_COLL_JOB_SECRET"), std::string::npos);

  std::string other = helloLine(kRank3, "another-secret");
  other.pop_back();
  auto wrong = parseHello(other, "s3cret");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("does not match"), std::string::npos);

  // A proven line with a field changed no longer proves anything.
  std::string tampered = helloLine(kRank3, "s3cret");
  tampered.pop_back();
  tampered.replace(tampered.find(" 3 8 "), 5, " 2 8 ");
  EXPECT_FALSE(parseHello(tampered, "s3cret").ok());
}

TEST(BootstrapWire, MalformedHellosNameWhatIsWrong) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not a rank's hello"},
      {"HELLO 1 2 3 h m", "not a rank's hello"},
      {"TORUS-COLL/1 1 4 4242 h", "6 or 7 fields"},
      {"TORUS-COLL/1 1 4 4242 h m x y", "6 or 7 fields"},
      {"TORUS-COLL/1 x 4 4242 h m", "rank"},
      {"TORUS-COLL/1 1 0 4242 h m", "world size"},
      {"TORUS-COLL/1 1 99999999 4242 h m", "world size"},
      {"TORUS-COLL/1 1 4 -5 h m", "pid"},
      {"TORUS-COLL/1 1 4 42  m", "host id"},
      {"TORUS-COLL/1 1 4 42 h\tx m", "host id"},
  };
  for (const auto& [line, expected] : cases) {
    auto parsed = parseHello(line, "");
    ASSERT_FALSE(parsed.ok()) << line;
    EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
        << line << " -> " << parsed.error().message;
  }
}

TEST(BootstrapWire, TheRootsAnswerIsVerifiedOverTheWholeTable) {
  SessionTable table{0x1234'5678'9abcULL, {{10, "a", "m"}, {11, "a", "m"}, {12, "b", "n"}}};
  const std::string reply = sessionReply(table, "s3cret");
  const std::string head = reply.substr(0, reply.find('\n'));
  auto parsedHead = parseReplyHead(head);
  ASSERT_TRUE(parsedHead.ok()) << parsedHead.error().message;
  EXPECT_EQ(parsedHead->session, table.session);
  EXPECT_FALSE(parsedHead->proof.empty());
  EXPECT_TRUE(verifyReply(table, parsedHead->proof, "s3cret").ok());
  EXPECT_TRUE(verifyReply(table, "", "").ok());  // no secret: nothing to prove

  SessionTable altered = table;
  altered.ranks[2].hostId = "c";  // a forged root placing rank 2 on another host
  EXPECT_FALSE(verifyReply(altered, parsedHead->proof, "s3cret").ok());
  auto unproven = verifyReply(table, "", "s3cret");
  ASSERT_FALSE(unproven.ok());
  EXPECT_NE(unproven.error().message.find("without the job secret's proof"), std::string::npos);

  auto row = parseRankRow("12 b n");
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->pid, 12);
  EXPECT_FALSE(parseRankRow("12 b").ok());
  EXPECT_FALSE(parseReplyHead("OK 0").ok());
  EXPECT_FALSE(parseReplyHead("NOPE").ok());
  auto gaveUp = parseReplyHead("ERR rank 2 never connected");
  ASSERT_TRUE(gaveUp.ok());
  EXPECT_TRUE(gaveUp->gaveUp);
  EXPECT_EQ(gaveUp->why, "rank 2 never connected");
}

}  // namespace
}  // namespace torus::coll
