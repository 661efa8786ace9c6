// TORUS_CHECK: aborts on a broken invariant (a bug in Torus), printing file:line and why.
//
// Never CHECK what the outside world hands us (sysfs text, kubelet, kube-scheduler JSON, YAML,
// the network): those are errors and get a Result. CHECK is for "this cannot happen unless our own
// code is wrong", as Envoy's STYLE.md draws the line.
#pragma once

#include <string_view>

namespace torus::detail {
[[noreturn]] void checkFailed(const char* file, int line, const char* condition,
                              std::string_view message);
}  // namespace torus::detail

#define TORUS_CHECK(condition, message)                                        \
  do {                                                                         \
    if (!(condition)) [[unlikely]]                                             \
      ::torus::detail::checkFailed(__FILE__, __LINE__, #condition, (message)); \
  } while (false)
