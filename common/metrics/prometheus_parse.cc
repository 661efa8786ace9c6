#include "common/metrics/prometheus_parse.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace torus::metrics {
namespace {

bool nameChar(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// Reads a name at `at`; empty when there is none.
std::string_view readName(std::string_view line, std::size_t& at) {
  const std::size_t start = at;
  while (at < line.size() && nameChar(line[at], at == start))
    ++at;
  return line.substr(start, at - start);
}

Result<double> readValue(std::string_view text) {
  if (text == "+Inf" || text == "Inf") return HUGE_VAL;
  if (text == "-Inf") return -HUGE_VAL;
  if (text == "NaN") return std::nan("");
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size()) {
    return makeError(ErrorCode::kInvalidArgument, "'" + copy + "' is not a number");
  }
  return value;
}

Result<Sample> parseLine(std::string_view line) {
  Sample sample;
  std::size_t at = 0;
  sample.name = std::string(readName(line, at));
  if (sample.name.empty()) return makeError(ErrorCode::kInvalidArgument, "no metric name");
  if (at < line.size() && line[at] == '{') {
    ++at;
    while (true) {
      if (at < line.size() && line[at] == '}') {
        ++at;
        break;
      }
      const std::string key(readName(line, at));
      if (key.empty() || at + 1 >= line.size() || line[at] != '=' || line[at + 1] != '"') {
        return makeError(ErrorCode::kInvalidArgument, "a label is not name=\"value\"");
      }
      at += 2;
      std::string value;
      while (at < line.size() && line[at] != '"') {
        if (line[at] == '\\' && at + 1 < line.size()) {
          ++at;
          value += line[at] == 'n' ? '\n' : line[at];
        } else {
          value += line[at];
        }
        ++at;
      }
      if (at >= line.size())
        return makeError(ErrorCode::kInvalidArgument, "an unclosed label value");
      ++at;  // the closing quote
      sample.labels[key] = std::move(value);
      if (at < line.size() && line[at] == ',') ++at;
    }
  }
  if (at >= line.size() || line[at] != ' ') {
    return makeError(ErrorCode::kInvalidArgument, "no value after the series");
  }
  std::string_view rest = line.substr(at + 1);
  rest = rest.substr(0, rest.find(' '));  // an optional timestamp follows
  auto value = readValue(rest);
  if (!value) return std::move(value).error();
  sample.value = *value;
  return sample;
}

}  // namespace

const std::string& Sample::label(const std::string& key) const {
  static const std::string kNone;
  const auto it = labels.find(key);
  return it == labels.end() ? kNone : it->second;
}

Result<std::vector<Sample>> parsePrometheusText(std::string_view text) {
  std::vector<Sample> samples;
  std::size_t lineNumber = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++lineNumber;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    auto sample = parseLine(line);
    if (!sample) {
      return std::move(sample).error().withContext("metrics line " + std::to_string(lineNumber));
    }
    samples.push_back(std::move(*sample));
  }
  return samples;
}

}  // namespace torus::metrics
