// Strong types of the Scheduler–Agent–Supervisor workflows (docs/patterns.md,
// "Scheduler Agent Supervisor"): job and step ids, attempts, scheduler
// identities, step and job states, and time as the cores see it.
//
// A job is an ordered list of steps (a pipeline). Every step has a stable
// idempotency key (the same on every retry, so a service can de-duplicate) and
// an attempt number that grows on every dispatch: the attempt is the step's
// fencing token. A scheduler instance is identified by (instance, incarnation):
// a restarted scheduler gets a higher incarnation, so its previous life's locks
// are recognisable as its own ("resume") and never confused with a live claim.
#pragma once

#include "protocols/election/types.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace conclave::workflow {

/// Time as the workflow cores see it: a monotonic offset from an arbitrary
/// origin, passed in by the host (CAF's clock, real or virtual).
using timestamp = std::chrono::nanoseconds;
using duration = std::chrono::nanoseconds;

/// The supervisor leader's election term: recovery writes carry it (fencing).
using term = election::term;

/// Identity of a job, given by the submitter or generated. Non-empty.
struct job_id {
  std::string value;

  friend bool operator==(const job_id& a, const job_id& b) { return a.value == b.value; }
  friend bool operator!=(const job_id& a, const job_id& b) { return a.value != b.value; }
  friend bool operator<(const job_id& a, const job_id& b) { return a.value < b.value; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, job_id& x) {
    return f(x.value);
  }
};

/// Position of a step in its job, from 0.
struct step_index {
  uint32_t value = 0;

  friend constexpr bool operator==(step_index a, step_index b) {
    return a.value == b.value;
  }
  friend constexpr bool operator!=(step_index a, step_index b) {
    return a.value != b.value;
  }
  friend constexpr bool operator<(step_index a, step_index b) {
    return a.value < b.value;
  }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, step_index& x) {
    return f(x.value);
  }
};

/// Dispatch number of a step: 0 before the first claim, +1 on every claim.
/// The fencing token of the step: only an outcome for the current attempt counts.
struct attempt {
  uint32_t value = 0;

  friend constexpr bool operator==(attempt a, attempt b) { return a.value == b.value; }
  friend constexpr bool operator!=(attempt a, attempt b) { return a.value != b.value; }
  friend constexpr bool operator<(attempt a, attempt b) { return a.value < b.value; }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, attempt& x) {
    return f(x.value);
  }
};

/// A scheduler instance and its incarnation (LockedBy of a claimed step).
/// instance 0 means "nobody".
struct scheduler_ref {
  uint64_t instance = 0;
  uint64_t incarnation = 0;

  bool empty() const { return instance == 0; }

  friend constexpr bool operator==(scheduler_ref a, scheduler_ref b) {
    return a.instance == b.instance && a.incarnation == b.incarnation;
  }
  friend constexpr bool operator!=(scheduler_ref a, scheduler_ref b) { return !(a == b); }

  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, scheduler_ref& x) {
    return f(x.instance, x.incarnation);
  }
};

/// The stable idempotency key of a step's action: "job/step" for the forward
/// action, "job/step/undo" for its compensation. The same on every attempt.
inline std::string idempotency_key(const job_id& j, step_index s, bool compensation) {
  auto k = j.value + "/" + std::to_string(s.value);
  if (compensation)
    k += "/undo";
  return k;
}

/// States of a step (and, with the same meaning, of a job).
///   pending      waiting to be claimed by a scheduler
///   processing   claimed: LockedBy, CompleteBy and the attempt are set
///   processed    done (final unless the job compensates)
///   error        failed: permanent error or FailureCount reached the threshold
///   compensating its compensating action is due or running
///   compensated  its compensating action is done (final)
///   cancelled    abandoned by a user's cancel (final unless resubmitted)
enum class step_state : uint8_t {
  pending = 0,
  processing = 1,
  processed = 2,
  error = 3,
  compensating = 4,
  compensated = 5,
  cancelled = 6,
};
using job_state = step_state;

constexpr uint8_t step_state_count = 7;

const char* to_string(step_state s) noexcept;

/// The states a job stays in unless a user acts (resubmit).
constexpr bool is_final(step_state s) {
  return s == step_state::processed || s == step_state::error
         || s == step_state::compensated || s == step_state::cancelled;
}

/// Kind of a failure reported by a service through its agent.
enum class failure_kind : uint8_t {
  /// May succeed if tried again (timeouts, overload): retried.
  transient = 0,
  /// Will not succeed however often it is tried: the step fails at once.
  permanent = 1,
};

/// Why the supervisor recovers a step.
enum class recovery_cause : uint8_t {
  /// CompleteBy passed without an outcome (hang, lost message).
  deadline = 0,
  /// The agent or scheduler that held the step died (monitor).
  monitor = 1,
  /// The agent reported a transient failure it could not retry away.
  failure = 2,
};

const char* to_string(recovery_cause c) noexcept;

} // namespace conclave::workflow
