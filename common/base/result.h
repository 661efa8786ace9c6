// Result<T> and Error: how every fallible function in Torus reports failure.
//
// Owns: the error vocabulary (gRPC canonical codes, as absl/status/status.h explains them) and a
// small std::expected-shaped carrier. Does not own: mapping to gRPC status, HTTP codes or the
// extender's Error field; each adapter does that in one small function.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/base/check.h"

namespace torus {

enum class ErrorCode {
  kInvalidArgument,     // the caller's input is wrong, whatever the system state
  kNotFound,            // a named thing does not exist
  kAlreadyExists,       // a create found the thing there
  kFailedPrecondition,  // the system is not in a state where this can work; retrying won't help
  kResourceExhausted,   // out of something (cores, memory, quota)
  kUnavailable,         // transient; retrying later may work
  kDeadlineExceeded,    // a bounded wait ran out
  kAborted,             // lost a race (concurrent change); retry the whole operation
  kPermissionDenied,    // the OS or API refused us
  kInternal,            // an invariant of a dependency broke
};

std::string_view errorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // Prefixes what the caller was doing: "discovering neuron3: " + "core_count: ...".
  Error withContext(std::string_view context) const& {
    return Error{code, std::string(context) + ": " + message};
  }
  Error withContext(std::string_view context) && {
    message.insert(0, std::string(context) + ": ");
    return std::move(*this);
  }
  std::string toString() const;
};

inline Error makeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    TORUS_CHECK(ok(), "value() on an error Result: " + std::get<1>(state_).toString());
    return std::get<0>(state_);
  }
  const T& value() const& {
    TORUS_CHECK(ok(), "value() on an error Result: " + std::get<1>(state_).toString());
    return std::get<0>(state_);
  }
  T&& value() && {
    TORUS_CHECK(ok(), "value() on an error Result: " + std::get<1>(state_).toString());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    TORUS_CHECK(!ok(), "error() on a successful Result");
    return std::get<1>(state_);
  }
  Error&& error() && {
    TORUS_CHECK(!ok(), "error() on a successful Result");
    return std::get<1>(std::move(state_));
  }

  template <typename U>
  T valueOr(U&& fallback) const& {
    return ok() ? std::get<0>(state_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error)
      : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& {
    TORUS_CHECK(!ok_, "error() on a successful Result");
    return error_;
  }
  Error&& error() && {
    TORUS_CHECK(!ok_, "error() on a successful Result");
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

inline Result<void> okResult() {
  return {};
}

}  // namespace torus

// Returns the error of `expr` (a Result) from the enclosing function, with context added.
#define TORUS_RETURN_IF_ERROR(expr, context)                        \
  do {                                                              \
    if (auto torus_status_ = (expr); !torus_status_.ok())           \
      return std::move(torus_status_).error().withContext(context); \
  } while (false)
