#include "common/base/redact_secrets.h"

#include <cctype>

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
