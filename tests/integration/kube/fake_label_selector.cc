#include "tests/integration/kube/fake_label_selector.h"

#include <algorithm>

namespace torus::testing {
namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

// Splits at commas outside parentheses: "a in (x,y),b" is two requirements.
std::vector<std::string> requirementsOf(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (const char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trimmed(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trimmed(current).empty()) parts.push_back(trimmed(current));
  return parts;
}

}  // namespace

std::variant<LabelSelector, std::string> parseLabelSelector(const std::string& text) {
  LabelSelector selector;
  for (const std::string& part : requirementsOf(text)) {
    const std::string refused = "unable to parse requirement: '" + part + "'";
    LabelRequirement requirement;
    if (part.empty()) return refused;
    if (const auto set = part.find(" in ("), notSet = part.find(" notin (");
        set != std::string::npos || notSet != std::string::npos) {
      const bool in = set != std::string::npos;
      const std::size_t at = in ? set : notSet;
      if (part.back() != ')') return refused;
      requirement.key = trimmed(part.substr(0, at));
      requirement.op = in ? LabelRequirement::Op::kIn : LabelRequirement::Op::kNotIn;
      const std::size_t open = part.find('(', at);
      std::string values = part.substr(open + 1, part.size() - open - 2);
      for (std::size_t start = 0; start <= values.size();) {
        std::size_t end = values.find(',', start);
        if (end == std::string::npos) end = values.size();
        requirement.values.insert(trimmed(values.substr(start, end - start)));
        start = end + 1;
      }
    } else if (const auto unequal = part.find("!="); unequal != std::string::npos) {
      requirement.key = trimmed(part.substr(0, unequal));
      requirement.op = LabelRequirement::Op::kNotIn;
      requirement.values = {trimmed(part.substr(unequal + 2))};
    } else if (const auto equal = part.find('='); equal != std::string::npos) {
      const std::size_t width = part.compare(equal, 2, "==") == 0 ? 2 : 1;
      requirement.key = trimmed(part.substr(0, equal));
      requirement.op = LabelRequirement::Op::kIn;
      requirement.values = {trimmed(part.substr(equal + width))};
    } else if (part.front() == '!') {
      requirement.key = trimmed(part.substr(1));
      requirement.op = LabelRequirement::Op::kNotExists;
    } else {
      requirement.key = part;
    }
    if (requirement.key.empty() || requirement.key.find(' ') != std::string::npos) return refused;
    selector.push_back(std::move(requirement));
  }
  return selector;
}

bool labelsMatch(const nlohmann::json& object, const LabelSelector& selector) {
  const auto metadata = object.find("metadata");
  const nlohmann::json labels = metadata != object.end() && metadata->is_object()
                                    ? metadata->value("labels", nlohmann::json::object())
                                    : nlohmann::json::object();
  return std::ranges::all_of(selector, [&](const LabelRequirement& requirement) {
    const auto found = labels.find(requirement.key);
    const bool present = found != labels.end() && found->is_string();
    switch (requirement.op) {
      case LabelRequirement::Op::kExists:
        return present;
      case LabelRequirement::Op::kNotExists:
        return !present;
      case LabelRequirement::Op::kIn:
        return present && requirement.values.contains(found->get<std::string>());
      case LabelRequirement::Op::kNotIn:
        return !present || !requirement.values.contains(found->get<std::string>());
    }
    return false;
  });
}

}  // namespace torus::testing
