// A label selector as the API server reads one in ?labelSelector= (the fake API server's lists):
// comma-separated requirements, all of which must hold — KEY=VALUE, KEY==VALUE, KEY!=VALUE,
// KEY in (A,B), KEY notin (A,B), KEY (present) and !KEY (absent); empty matches everything.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace torus::testing {

struct LabelRequirement {
  enum class Op { kIn, kNotIn, kExists, kNotExists };
  std::string key;
  Op op = Op::kExists;
  std::set<std::string> values;
};

using LabelSelector = std::vector<LabelRequirement>;

// The selector, or the API server's message for one it refuses.
std::variant<LabelSelector, std::string> parseLabelSelector(const std::string& text);

// Whether `object`'s metadata.labels satisfy every requirement.
bool labelsMatch(const nlohmann::json& object, const LabelSelector& selector);

}  // namespace torus::testing
