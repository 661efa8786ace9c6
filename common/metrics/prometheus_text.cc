#include "common/metrics/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace torus::metrics {
namespace {

void appendEscaped(std::string& out, std::string_view text, bool quoteToo) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quoteToo) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

}  // namespace

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[40];
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    // The shortest form that reads back as the same double, so nothing is lost on the wire.
    for (int digits = 9; digits <= 17; ++digits) {
      std::snprintf(text, sizeof text, "%.*g", digits, value);
      if (std::strtod(text, nullptr) == value) break;
    }
  }
  return text;
}

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  appendEscaped(out_, help, false);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PrometheusText::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      appendEscaped(out_, labels[i].second, true);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += formatValue(value);
  out_ += '\n';
}

}  // namespace torus::metrics
