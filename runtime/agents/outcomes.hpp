// The outcomes the built-in services answer (builtin_agents.hpp): failures
// with their error kinds.
#pragma once

#include "protocols/workflow/lifecycle.hpp"

#include <string>

namespace conclave::agents {

/// A failure outcome.
inline workflow::step_outcome failure_outcome(workflow::failure_kind kind,
                                              std::string error_kind,
                                              std::string message) {
  workflow::step_outcome o;
  o.ok = false;
  o.kind = kind;
  o.error_kind = std::move(error_kind);
  o.message = std::move(message);
  return o;
}

/// A payload the service cannot read: permanent, trying again cannot help.
inline workflow::step_outcome bad_payload(std::string message) {
  return failure_outcome(workflow::failure_kind::permanent, "bad_payload",
                         std::move(message));
}

} // namespace conclave::agents
