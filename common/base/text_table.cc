#include "common/base/text_table.h"

#include <algorithm>

namespace torus {
namespace {

std::pair<std::string, std::string> headerLines(const std::string& header) {
  const std::size_t newline = header.find('\n');
  if (newline == std::string::npos) return {header, ""};
  return {header.substr(0, newline), header.substr(newline + 1)};
}

std::string pad(const std::string& text, std::size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

}  // namespace

std::string TextTable::render() const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  bool twoLineHeader = false;
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    const auto [first, second] = headerLines(headers_[i]);
    widths[i] = std::max(first.size(), second.size());
    twoLineHeader = twoLineHeader || !second.empty();
  }
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string rule = "+";
  for (const std::size_t width : widths)
    rule += std::string(width + 2, '-') + "+";
  rule += '\n';
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text = "|";
    for (std::size_t i = 0; i < widths.size(); ++i) {
      text += ' ' + pad(i < cells.size() ? cells[i] : "", widths[i]) + " |";
    }
    return text + '\n';
  };
  std::vector<std::string> first;
  std::vector<std::string> second;
  for (const std::string& header : headers_) {
    auto [a, b] = headerLines(header);
    first.push_back(a);
    second.push_back(b);
  }
  std::string out = rule + line(first);
  if (twoLineHeader) out += line(second);
  out += rule;
  for (const auto& row : rows_)
    out += line(row);
  out += rule;
  return out;
}

}  // namespace torus
