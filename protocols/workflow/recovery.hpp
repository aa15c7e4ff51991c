// The supervisor's recovery decision (docs/patterns.md, "Scheduler Agent
// Supervisor"): for a running step whose attempt is lost, retry it, fail it,
// or undo the job with compensating actions — by FailureCount against the
// job's threshold — and the order in which compensations run.
//
// - Each recovery adds one to the step's FailureCount (for a compensating
//   action: its own count). Below the threshold: retry (back to pending,
//   claimable after the job's recovery backoff). Reaching it: the step fails.
// - A failed forward step makes the job compensate when at least one completed
//   step declares a compensating action; otherwise the job fails (Error and an
//   operator event). A failed compensation fails the job: nothing undoes an undo.
// - Compensations run one at a time, in reverse order of completion.
#pragma once

#include "protocols/workflow/records.hpp"

#include <vector>

namespace conclave::workflow {

enum class recovery_action : uint8_t { retry = 0, fail = 1, compensate = 2 };

const char* to_string(recovery_action a) noexcept;

struct recovery_decision {
  recovery_action action = recovery_action::retry;
  /// The step's failure count after this recovery.
  uint32_t failure_count = 0;
  /// retry: the step may be claimed again from then on.
  timestamp not_before{0};
};

/// Decides what recovering step `s` of `v` at `now` does (pure: changes nothing).
recovery_decision decide_recovery(const job_view& v, const step_record& s, timestamp now);

/// Completed steps that declare a compensating action, most recent first.
std::vector<step_index> compensation_order(const job_view& v);

/// True when failing now would make the job compensate rather than fail.
bool can_compensate(const job_view& v);

} // namespace conclave::workflow
