// The ExecCredential a plugin prints, checked as client-go checks it: every way it can be wrong
// is named in the error, and RFC 3339 times with fractions and offsets are read.
#include <gtest/gtest.h>

#include "common/kube/exec_credential.h"

namespace torus::kube {
namespace {

std::string credential(const std::string& version, const std::string& status) {
  return R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/)" + version +
         R"(","status":)" + status + "}";
}

TEST(ExecCredentialOutput, WhatIsWrongIsNamed) {
  const std::string v1 = "client.authentication.k8s.io/v1";
  const struct {
    const char* what;
    std::string output;
    const char* expected;
  } cases[] = {
      {"empty", "", "stdout is empty"},
      {"not JSON", "Token: abc", "stdout is not JSON: \"Token: abc\""},
      {"other version", credential("v1beta1", R"({"token":"a"})"),
       "asks for apiVersion client.authentication.k8s.io/v1, the plugin returned "
       "\"client.authentication.k8s.io/v1beta1\""},
      {"other kind", R"({"apiVersion":")" + v1 + R"(","kind":"Secret","status":{}})",
       "kind is \"Secret\""},
      {"no status", R"({"apiVersion":")" + v1 + R"(","kind":"ExecCredential"})", "no status"},
      {"nothing in it", credential("v1", "{}"), "neither a token nor"},
      {"cert without key", credential("v1", R"({"clientCertificateData":"x"})"),
       "clientCertificateData without clientKeyData"},
      {"token a number", credential("v1", R"({"token":7})"), "status.token is a number"},
      {"bad expiry", credential("v1", R"({"token":"a","expirationTimestamp":"tomorrow"})"),
       "expirationTimestamp \"tomorrow\" is not an RFC 3339 time"},
  };
  for (const auto& c : cases) {
    auto parsed = parseExecCredential(c.output, v1);
    ASSERT_FALSE(parsed.ok()) << c.what;
    EXPECT_NE(parsed.error().message.find(c.expected), std::string::npos)
        << c.what << ": " << parsed.error().message;
  }
  auto good = parseExecCredential(
      credential("v1", R"({"token":"a","expirationTimestamp":"2030-01-01T01:00:00.5+01:00"})"), v1);
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->expiry, parseRfc3339("2030-01-01T00:00:00Z"));
}

}  // namespace
}  // namespace torus::kube
