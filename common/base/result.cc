#include "common/base/result.h"

namespace torus {

std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case ErrorCode::kAborted:
      return "Aborted";
    case ErrorCode::kPermissionDenied:
      return "PermissionDenied";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Error::toString() const {
  std::string text(errorCodeName(code));
  text += ": ";
  text += message;
  return text;
}

}  // namespace torus
