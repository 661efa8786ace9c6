// The build's version, set by CMake from project(VERSION) and the git commit.
#pragma once

#include <string_view>

namespace torus {
std::string_view versionString();  // "0.1.0 (abc1234)"
}  // namespace torus
