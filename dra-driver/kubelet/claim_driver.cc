#include "dra-driver/kubelet/claim_driver.h"

#include <nlohmann/json.hpp>

#include "common/kube/object_fields.h"

namespace torus::dra {

std::string baseRequestName(const std::string& request) {
  return request.substr(0, request.find('/'));
}

Result<void> checkAllocatedClaim(const nlohmann::json& claim, const ClaimRef& ref) {
  const std::string where = "claim " + ref.key();
  if (kube::stringAt(claim, {"metadata", "uid"}) != ref.uid) {
    return makeError(ErrorCode::kNotFound, where + ": the API has no claim with uid " + ref.uid +
                                               " (deleted and re-created?)");
  }
  if (!kube::fieldAt(claim, {"status", "allocation", "devices", "results"}).is_array()) {
    return makeError(ErrorCode::kFailedPrecondition, where + ": not allocated");
  }
  return okResult();
}

}  // namespace torus::dra
