#include "common/kube/object_fields.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace torus::kube {
namespace {

using nlohmann::json;

const json kPod = json::parse(R"({
  "metadata": {"name": "p", "labels": {"a": "1", "n": 2, "z": null}, "annotations": {"k": "v"}},
  "spec": {"tolerations": [{"key": "t"}], "nodeSelector": "not an object", "nullList": null}
})");

TEST(ObjectFields, ReadsThroughNestedObjectsAndNeverThrows) {
  EXPECT_EQ(stringAt(kPod, {"metadata", "name"}), "p");
  EXPECT_EQ(annotationOf(kPod, "k"), "v");
  EXPECT_TRUE(fieldAt(kPod, {"metadata", "missing", "deeper"}).is_null());
  EXPECT_TRUE(fieldAt(kPod, {"metadata", "name", "through a string"}).is_null());
  EXPECT_EQ(stringAt(kPod, {"metadata", "labels", "n"}), "") << "a number is no string";
  EXPECT_TRUE(fieldAt(json("text"), {"a"}).is_null());
}

TEST(ObjectFields, AnArrayReadsEmptyWhenMissingNullOrOfAnotherType) {
  EXPECT_EQ(arrayAt(kPod, {"spec", "tolerations"}).size(), 1U);
  EXPECT_TRUE(arrayAt(kPod, {"spec", "tolerations"})[0].is_object());
  for (const char* key : {"missing", "nullList", "nodeSelector"}) {
    const json& list = arrayAt(kPod, {"spec", key});
    EXPECT_TRUE(list.is_array()) << key;
    EXPECT_TRUE(list.empty()) << key;
  }
}

TEST(ObjectFields, AKeyIsNamespaceSlashNameOrTheNameAlone) {
  EXPECT_EQ(keyOf(json{{"metadata", {{"namespace", "ns"}, {"name", "p"}}}}), "ns/p");
  EXPECT_EQ(keyOf(json{{"metadata", {{"name", "node-a"}}}}), "node-a") << "cluster-scoped";
  EXPECT_EQ(keyOf(json::object()), "");
}

TEST(ObjectFields, AStringMapKeepsOnlyStringMembers) {
  EXPECT_EQ(stringMapAt(kPod, {"metadata", "labels"}),
            (std::map<std::string, std::string>{{"a", "1"}}));
  EXPECT_TRUE(stringMapAt(kPod, {"spec", "nodeSelector"}).empty()) << "not an object";
  EXPECT_TRUE(stringMapAt(kPod, {"spec", "missing"}).empty());
}

}  // namespace
}  // namespace torus::kube
