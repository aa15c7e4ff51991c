// The step lifecycle of a job (docs/patterns.md, "Scheduler Agent Supervisor"): every
// state change a scheduler, a supervisor or a client makes, as pure functions
// on a job_view (the job record and its step records). The actors read the
// view in a store transaction, call one of these, and write back the changed
// records, index entries and events in the same transaction.
//
// Step states and legal transitions (legal_step_transition):
//
//   pending ──claim──> processing ──success──> processed ──(job undoes)──> compensating
//     ^  │                 │  │                                         │ ^   │
//     │  └──cancel──┐      │  └─permanent / FailureCount at threshold─┐ │ └───┘ claim,
//     └──recover────┼──────┘                                          v │  recover
//        (below     v                                               error <─┤ permanent /
//      threshold) cancelled ──resubmit──> pending                     │    │ threshold
//                                                  error ──resubmit───┘    v
//                                                                   compensated
//   processing → processing is a scheduler resuming its own lock after a restart.
//
// Jobs move pending → processing (first claim) → processed | error |
// compensating → compensated | error, and pending/processing → cancelled.
//
// Guarantees
// - Fencing: complete() and recover() name the attempt they are about. If the
//   step is no longer at that attempt, or no longer running, nothing changes and
//   effects::stale is set for the host to count — a late reply of an older
//   attempt can never complete, fail or recover a step.
// - Only one step of a job is ever claimable: the current one going forward,
//   and during compensation the completed step with the highest completion
//   number still to undo (compensation runs in reverse completion order).
// - A failing operation leaves the view unchanged (it works on a copy).
#pragma once

#include "protocols/workflow/errc.hpp"
#include "protocols/workflow/records.hpp"

#include <optional>
#include <vector>

namespace conclave::workflow {

bool legal_step_transition(step_state from, step_state to);
bool legal_job_transition(job_state from, job_state to);

/// What a scheduler sends to an agent after a claim.
struct dispatch {
  job_id job;
  step_index step;
  workflow::attempt attempt;
  /// true: run the step's compensating action.
  bool compensation = false;
  std::string agent_kind;
  std::string payload;
  timestamp deadline{0};
  std::string idempotency_key;
  retry_policy retry;
};

/// What an agent reports for one dispatch (it reports nothing at the deadline).
struct step_outcome {
  bool ok = true;
  failure_kind kind = failure_kind::transient;
  /// Kind of error as the service names it ("card_declined").
  std::string error_kind;
  std::string message;
};

/// The consequences of one operation, for the host to write and count.
struct effects {
  /// Events to store (already numbered from job.next_event).
  std::vector<job_event> events;
  /// After claim() / resume(): what to send to an agent.
  std::optional<workflow::dispatch> dispatched;
  /// An outcome or recovery for an attempt that is not current: nothing changed.
  bool stale = false;
};

/// A new job from a validated spec (see validate() in records.hpp): all steps
/// pending, the "received" event.
job_view make_job(const job_spec& spec, timestamp now, effects& out);

/// The step a scheduler may claim now, if any.
std::optional<step_index> claimable_step(const job_view& v, timestamp now);

/// Claims the claimable step for `by`: LockedBy, CompleteBy = now + timeout,
/// Processing (or stays compensating), attempt + 1. not_claimable if none.
result<effects> claim(job_view& v, scheduler_ref by, timestamp now);

/// A restarted scheduler (same instance, higher incarnation) takes over a step
/// its previous life had locked: a new attempt under the new lock. The
/// previous life's attempt is fenced off. not_claimable otherwise.
result<effects> resume(job_view& v, step_index s, scheduler_ref by, timestamp now);

/// Records an agent's outcome for attempt `a` of step `s`.
/// Success: processed (or compensated) and the job moves on. Permanent failure:
/// error at once, then the job compensates or fails. Transient failure (the
/// agent's own retries ran out): a recovery with cause `failure`.
result<effects> complete(job_view& v, step_index s, workflow::attempt a,
                         const step_outcome& o, timestamp now);

/// Recovery of a running step whose attempt `a` is lost (deadline passed, or
/// its agent or scheduler died): FailureCount + 1; below the job's threshold
/// the step goes back to pending (compensating), unlocked, claimable again
/// after recovery_backoff; at the threshold it fails (see complete()).
/// A `deadline` recovery before CompleteBy is wrong_state.
/// `unsafe_ignore_fence` is a planted defect for the simulator's meta-test
/// (`conclave sim --workload jobs --unsafe supervisor-ignores-fence`): the
/// attempt and running checks are skipped, so a late recovery hits whatever
/// attempt the step is at now. Never set it outside that test.
result<effects> recover(job_view& v, step_index s, workflow::attempt a,
                        recovery_cause cause, timestamp now,
                        bool unsafe_ignore_fence = false);

/// Cancels a pending or processing job: the running step is abandoned (its
/// reply will be stale), the rest cancelled; if completed steps declare
/// compensation, they are undone (job compensating), else the job is cancelled.
result<effects> cancel(job_view& v, timestamp now);

/// Resubmits a job in error or cancelled: a failed compensation resumes the
/// compensation; otherwise the failed or cancelled steps go back to pending with
/// FailureCount 0 and the job continues from the first of them.
result<effects> resubmit(job_view& v, timestamp now);

} // namespace conclave::workflow
