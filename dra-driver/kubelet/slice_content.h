// What a ResourceSlice says, as the publisher compares it: the stored copy against the one it
// built (the API server fills defaults and may drop fields a feature gate turns off), and which
// fields its devices carry. Pure functions of the JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace torus::dra {

// Whether `stored` (as the API returns it) says what `published` (as built, any pool generation)
// does: the same spec apart from the pool generation, where a field only the stored copy has is
// tolerated when it holds its zero value (the API server's defaults), and nothing else is.
bool sameSliceContent(const nlohmann::json& stored, const nlohmann::json& published);

// Whether any device of `slice` has `field` (taints, consumesCounters).
bool anyDeviceHas(const nlohmann::json& slice, const char* field);

// The slice's name, or what a dry-run probe's generated name starts with.
std::string sliceLabel(const nlohmann::json& slice);

}  // namespace torus::dra
