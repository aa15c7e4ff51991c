#include "protocols/workflow/errc.hpp"

#include "protocols/workflow/types.hpp"

namespace conclave::workflow {

const char* to_string(errc e) noexcept {
  switch (e) {
  case errc::ok:
    return "ok";
  case errc::empty_job:
    return "empty_job";
  case errc::unknown_agent_kind:
    return "unknown_agent_kind";
  case errc::zero_timeout:
    return "zero_timeout";
  case errc::too_large:
    return "too_large";
  case errc::unknown_job:
    return "unknown_job";
  case errc::job_exists:
    return "job_exists";
  case errc::illegal_transition:
    return "illegal_transition";
  case errc::stale_attempt:
    return "stale_attempt";
  case errc::not_claimable:
    return "not_claimable";
  case errc::corrupt_record:
    return "corrupt_record";
  case errc::unsupported_version:
    return "unsupported_version";
  case errc::stale_term:
    return "stale_term";
  case errc::bad_argument:
    return "bad_argument";
  case errc::wrong_state:
    return "wrong_state";
  case errc::store_failure:
    return "store_failure";
  }
  return "unknown";
}

const char* to_string(step_state s) noexcept {
  switch (s) {
  case step_state::pending:
    return "pending";
  case step_state::processing:
    return "processing";
  case step_state::processed:
    return "processed";
  case step_state::error:
    return "error";
  case step_state::compensating:
    return "compensating";
  case step_state::compensated:
    return "compensated";
  case step_state::cancelled:
    return "cancelled";
  }
  return "unknown";
}

const char* to_string(recovery_cause c) noexcept {
  switch (c) {
  case recovery_cause::deadline:
    return "deadline";
  case recovery_cause::monitor:
    return "monitor";
  case recovery_cause::failure:
    return "failure";
  }
  return "unknown";
}

namespace {

class category final : public std::error_category {
public:
  const char* name() const noexcept override { return "conclave.workflow"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
    case errc::ok:
      return "success";
    case errc::empty_job:
      return "a job needs at least one step";
    case errc::unknown_agent_kind:
      return "no agent serves the step's agent kind";
    case errc::zero_timeout:
      return "a step's completion timeout must be greater than zero";
    case errc::too_large:
      return "payload, id or text larger than the configured limit";
    case errc::unknown_job:
      return "no job with that id";
    case errc::job_exists:
      return "a job with that id exists already";
    case errc::illegal_transition:
      return "not a legal state transition";
    case errc::stale_attempt:
      return "outcome of an older attempt: ignored";
    case errc::not_claimable:
      return "the step is not pending or is locked by another scheduler";
    case errc::corrupt_record:
      return "a stored workflow record does not parse";
    case errc::unsupported_version:
      return "a stored workflow record has an unknown version";
    case errc::stale_term:
      return "a higher supervisor term is recorded: this supervisor was deposed";
    case errc::bad_argument:
      return "invalid argument";
    case errc::wrong_state:
      return "the job is not in a state that allows this";
    case errc::store_failure:
      return "the store failed the transaction";
    }
    return "unknown error";
  }
};

} // namespace

const std::error_category& workflow_category() noexcept {
  static const category c;
  return c;
}

} // namespace conclave::workflow
