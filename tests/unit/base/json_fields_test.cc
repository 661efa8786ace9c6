#include "common/base/json_fields.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus {
namespace {

using nlohmann::json;

TEST(JsonFields, ARequiredFieldIsReadOrItsErrorNamesThePathAndTheShape) {
  const json entry = json::parse(R"({"lnc": 2, "name": "a", "ids": [1, 2], "big": 3000000000,
                                     "flag": true, "gone": null, "float": 1e39})");
  EXPECT_EQ(*required<int>(entry, "lnc", "claim x"), 2);
  EXPECT_EQ(*required<std::string>(entry, "name", "claim x"), "a");
  EXPECT_EQ(*required<std::vector<int>>(entry, "ids", "claim x"), (std::vector<int>{1, 2}));
  EXPECT_EQ(*required<std::int64_t>(entry, "big", ""), 3000000000);
  EXPECT_TRUE(*required<bool>(entry, "flag", ""));

  EXPECT_EQ(required<int>(entry, "absent", "claim x").error().message, "claim x.absent: missing");
  EXPECT_EQ(required<int>(entry, "gone", "claim x").error().message, "claim x.gone: missing");
  EXPECT_EQ(required<int>(entry, "name", "").error().message,
            "name: expected a number (a 32-bit integer), got string");
  EXPECT_EQ(required<int>(entry, "big", "").error().message,
            "big: expected a number (a 32-bit integer), got number 3000000000");
  // A float beyond any integer is refused before it is converted (undefined behaviour).
  EXPECT_EQ(required<int>(entry, "float", "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(required<std::vector<std::string>>(entry, "ids", "").error().message,
            "ids: expected a list of strings, got array");
  EXPECT_EQ(required<std::string>(json::array(), "name", "Pod").error().message,
            "Pod.name: missing");
}

TEST(JsonFields, AnOptionalFieldFallsBackOnlyWhenMissingOrNull) {
  const json entry = json::parse(R"({"ns": "team", "gone": null, "wrong": 5})");
  EXPECT_EQ(*optional<std::string>(entry, "ns", "meta"), "team");
  EXPECT_EQ(*optional<std::string>(entry, "absent", "meta", "default"), "default");
  EXPECT_EQ(*optional<std::string>(entry, "gone", "meta", "default"), "default");
  EXPECT_EQ(optional<std::string>(entry, "wrong", "meta").error().message,
            "meta.wrong: expected a string, got number 5");
}

TEST(JsonFields, TextOfInvalidUtf8IsReplacedNotThrown) {
  const json value = std::string("a\xff");
  EXPECT_EQ(jsonText(value), "\"a\xEF\xBF\xBD\"");
}

}  // namespace
}  // namespace torus
