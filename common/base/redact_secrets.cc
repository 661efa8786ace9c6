#include "common/base/redact_secrets.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace torus {
namespace {

constexpr std::string_view kRedacted = "[redacted]";

bool isTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
         c == '+' || c == '/' || c == '=' || c == '~';
}

bool isBase64Url(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_';
}

bool startsWithNoCase(std::string_view text, std::size_t at, std::string_view word) {
  if (text.size() - at < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != word[i]) return false;
  }
  return true;
}

// The length of a JWT (three base64url parts, the first an encoded JSON object) at `at`; 0 if
// there is none.
std::size_t jwtAt(std::string_view text, std::size_t at) {
  if (text.compare(at, 3, "eyJ") != 0) return 0;
  std::size_t end = at;
  for (int part = 0; part < 3; ++part) {
    const std::size_t start = end;
    while (end < text.size() && isBase64Url(text[end]))
      ++end;
    if (end - start < 4 && part < 2) return 0;
    if (part < 2) {
      if (end >= text.size() || text[end] != '.') return 0;
      ++end;
    }
  }
  return end - at;
}

bool isBase64(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '/' || c == '=';
}

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

// The length of a base64-wrapped PEM block at `at` (a kubeconfig's client-key-data, a Secret's
// data): "LS0tLS1CRUdJTi" is "-----BEGIN" in base64. 0 if there is none.
std::size_t base64PemAt(std::string_view text, std::size_t at) {
  if (text.compare(at, 14, "LS0tLS1CRUdJTi") != 0) return 0;
  if (at > 0 && isBase64(text[at - 1])) return 0;
  std::size_t end = at;
  while (end < text.size() && isBase64(text[end]))
    ++end;
  return end - at;
}

// The length of an AWS access key id (AKIA... long-term, ASIA... temporary: 20 upper-case
// letters and digits) at `at`; 0 if there is none.
std::size_t awsAccessKeyAt(std::string_view text, std::size_t at) {
  if (text.compare(at, 4, "AKIA") != 0 && text.compare(at, 4, "ASIA") != 0) return 0;
  if (at > 0 && std::isalnum(static_cast<unsigned char>(text[at - 1])) != 0) return 0;
  constexpr std::size_t kLength = 20;
  if (text.size() - at < kLength) return 0;
  for (std::size_t i = at + 4; i < at + kLength; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!(std::isupper(c) != 0 || std::isdigit(c) != 0)) return 0;
  }
  if (at + kLength < text.size() && std::isalnum(static_cast<unsigned char>(text[at + kLength])))
    return 0;
  return kLength;
}

// At a URL's "://": where the password of "user:password@" starts and ends, or {0, 0}.
std::pair<std::size_t, std::size_t> urlPasswordAt(std::string_view text, std::size_t at) {
  if (text.compare(at, 3, "://") != 0) return {0, 0};
  std::size_t colon = 0;
  for (std::size_t i = at + 3; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '@')
      return colon > 0 && i > colon + 1 ? std::pair{colon + 1, i}
                                        : std::pair<std::size_t, std::size_t>{};
    if (c == '/' || c == '"' || c == '\'' || std::isspace(static_cast<unsigned char>(c))) break;
    if (c == ':' && colon == 0) colon = i;
  }
  return {0, 0};
}

// Keys whose value is a credential whatever it looks like (an opaque token has no form to know
// it by): NAME=VALUE, NAME: VALUE, "NAME": "VALUE", for a NAME that ends so.
constexpr std::string_view kSecretKeyEndings[] = {
    "password",          "passwd",          "secret",     "token", "apikey", "api_key", "api-key",
    "secret_access_key", "secretaccesskey", "private_key"};

// At the start of a word: where the credential value of a secret-named key starts and ends, or
// {0, 0}.
std::pair<std::size_t, std::size_t> secretValueAt(std::string_view text, std::size_t at) {
  if (at > 0 && isWordChar(text[at - 1])) return {0, 0};
  std::size_t end = at;
  while (end < text.size() && isWordChar(text[end]))
    ++end;
  if (end == at) return {0, 0};
  bool secretName = false;
  for (const std::string_view ending : kSecretKeyEndings) {
    if (end - at >= ending.size() && startsWithNoCase(text, end - ending.size(), ending)) {
      secretName = true;
      break;
    }
  }
  if (!secretName) return {0, 0};
  std::size_t i = end;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;
  while (i < text.size() && text[i] == ' ')
    ++i;
  if (i >= text.size() || (text[i] != ':' && text[i] != '=')) return {0, 0};
  ++i;
  while (i < text.size() && text[i] == ' ')
    ++i;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;
  const std::size_t start = i;
  while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) &&
         std::string_view("\"',;}]&{[").find(text[i]) == std::string_view::npos) {
    ++i;
  }
  const std::string_view value = text.substr(start, i - start);
  if (value.empty() || value == "true" || value == "false" || value == "null") return {0, 0};
  return {start, i};
}

}  // namespace

std::string redactSecrets(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    if (const std::size_t jwt = jwtAt(text, i); jwt > 0) {
      out += kRedacted;
      i += jwt;
      continue;
    }
    if (const std::size_t length = std::max(base64PemAt(text, i), awsAccessKeyAt(text, i));
        length > 0) {
      out += kRedacted;
      i += length;
      continue;
    }
    if (const auto [start, end] = urlPasswordAt(text, i); end > 0) {
      out.append(text.substr(i, start - i));
      out += kRedacted;
      i = end;
      continue;
    }
    if (const auto [start, end] = secretValueAt(text, i); end > 0) {
      out.append(text.substr(i, start - i));
      out += kRedacted;
      i = end;
      continue;
    }
    if (startsWithNoCase(text, i, "bearer ")) {
      std::size_t end = i + 7;
      while (end < text.size() && text[end] == ' ')
        ++end;
      const std::size_t start = end;
      while (end < text.size() && isTokenChar(text[end]))
        ++end;
      if (end - start >= 8) {
        out.append(text.substr(i, start - i));
        out += kRedacted;
        i = end;
        continue;
      }
    }
    if (text.compare(i, 11, "-----BEGIN ") == 0) {
      const std::size_t header = text.find("-----", i + 11);
      if (header != std::string_view::npos &&
          text.substr(i, header - i).find("PRIVATE KEY") != std::string_view::npos) {
        const std::size_t footer = text.find("-----END ", header + 5);
        const std::size_t close =
            footer == std::string_view::npos ? footer : text.find("-----", footer + 9);
        out += kRedacted;
        i = close == std::string_view::npos ? text.size() : close + 5;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace torus
