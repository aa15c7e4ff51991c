// Errors of the workflows: one enum, a std::error_category and the
// Boost.Outcome result type of the pure cores. Actors convert the same enum to
// caf::error (actors/workflow/type_ids.hpp), so a requester gets a typed error.
#pragma once

#include <boost/outcome.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace conclave::workflow {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

enum class errc : uint8_t {
  ok = 0,
  /// A job without steps.
  empty_job = 1,
  /// A step names an agent kind nobody serves.
  unknown_agent_kind = 2,
  /// A step's completion timeout is zero.
  zero_timeout = 3,
  /// A payload, id or error text is larger than the limit.
  too_large = 4,
  /// No job with that id.
  unknown_job = 5,
  /// A job with that id exists already.
  job_exists = 6,
  /// The requested state change is not a legal transition.
  illegal_transition = 7,
  /// An outcome for an attempt that is not the step's current one (fenced).
  stale_attempt = 8,
  /// The step cannot be claimed (not due, or locked by someone else).
  not_claimable = 9,
  /// A stored record does not parse, or fails a bound.
  corrupt_record = 10,
  /// A stored record has a version this code does not read.
  unsupported_version = 11,
  /// A recovery write carries a term lower than the highest recorded.
  stale_term = 12,
  /// Any other invalid argument (bad retry policy, empty id, ...).
  bad_argument = 13,
  /// The operation needs a job in another state (cancel a final job, ...).
  wrong_state = 14,
  /// The store failed the transaction (lock timeout, I/O failure, ...).
  store_failure = 15,
};

const std::error_category& workflow_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), workflow_category()};
}

/// Readable name of an error value ("stale_attempt").
const char* to_string(errc e) noexcept;

template <class T>
using result = outcome::result<T, std::error_code>;

} // namespace conclave::workflow

namespace std {
template <>
struct is_error_code_enum<conclave::workflow::errc> : true_type {};
} // namespace std
