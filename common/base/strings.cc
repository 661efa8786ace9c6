#include "common/base/strings.h"

#include <cctype>
#include <cstdio>

namespace torus {

std::string_view trim(std::string_view text) {
  const auto isSpace = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && isSpace(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && isSpace(text.back()))
    text.remove_suffix(1);
  return text;
}

std::string toLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::vector<std::string_view> splitAndTrim(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    pieces.push_back(
        trim(text.substr(start, end == std::string_view::npos ? text.npos : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return pieces;
}

namespace {
template <typename Item>
std::string joinItems(std::span<const Item> items, std::string_view separator) {
  std::string joined;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) joined += separator;
    joined += items[i];
  }
  return joined;
}
}  // namespace

std::string joinStrings(std::span<const std::string_view> items, std::string_view separator) {
  return joinItems(items, separator);
}

std::string joinStrings(std::span<const std::string> items, std::string_view separator) {
  return joinItems(items, separator);
}

std::string joinFirst(std::span<const std::string> items, std::string_view separator,
                      std::size_t shown) {
  if (items.size() <= shown) return joinItems(items, separator);
  return joinItems(items.first(shown), separator) + " and " + std::to_string(items.size() - shown) +
         " more";
}

std::string quoteJsonString(std::string_view text) {
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\t':
        quoted += "\\t";
        break;
      case '\r':
        quoted += "\\r";
        break;
      default:
        if (byte < 0x20 || byte >= 0x7f) {
          char escape[8];
          std::snprintf(escape, sizeof(escape), "\\u%04x", byte);
          quoted += escape;
        } else {
          quoted += c;
        }
    }
  }
  quoted += '"';
  return quoted;
}

std::string_view clipForMessage(std::string_view text, std::size_t limit) {
  return text.size() <= limit ? text : text.substr(0, limit);
}

std::string escapeUnprintable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 0x20 && byte < 0x7f) || c == '\n' || c == '\t') {
      out += c;
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

std::string percentEncoded(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace torus
