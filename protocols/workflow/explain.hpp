// "Why is it stuck": for a job that is not finished, where it is and what the
// system will do next, and when — computed from the stored records alone, so
// any client can ask any store replica without asking the actors.
//
// next_action, in the order the lifecycle goes through them:
//   wait_backoff     recovered, claimable again at `when` (recovery backoff)
//   await_claim      claimable now; a scheduler's next poll claims it
//   await_agent      an agent runs attempt N until CompleteBy (`when`); if no
//                    outcome arrives by then the supervisor will `then` (retry,
//                    fail or compensate), or at once if the agent dies
//   overdue          CompleteBy passed (`when`): the supervisor's next scan
//                    recovers it (`then`)
//   operator         the job failed; an operator fixes the cause and resubmits
//   none             the job is finished
#pragma once

#include "protocols/workflow/recovery.hpp"

#include <optional>
#include <string>

namespace conclave::workflow {

enum class next_action : uint8_t {
  none = 0,
  wait_backoff = 1,
  await_claim = 2,
  await_agent = 3,
  overdue = 4,
  operator_action = 5,
};

const char* to_string(next_action a) noexcept;

struct stuck_report {
  job_id job;
  job_state state = job_state::pending;
  /// The step the job waits on (none when the job is finished).
  std::optional<step_index> step;
  workflow::step_state current_state = workflow::step_state::pending;
  bool compensation = false;
  workflow::attempt attempt;
  uint32_t failure_count = 0;
  uint32_t failure_threshold = 0;
  scheduler_ref locked_by;
  std::optional<timestamp> complete_by;
  std::string last_error;
  next_action next = next_action::none;
  /// When `next` happens (none for operator / none).
  std::optional<timestamp> when;
  /// For await_agent and overdue: what the supervisor's recovery will do.
  std::optional<recovery_action> then;
};

stuck_report explain(const job_view& v, timestamp now);

/// One line a person reads, e.g. "job o-17 processing: step 1 (payment)
/// attempt 2 locked by scheduler 1/3, CompleteBy in 1.2 s; no outcome by then
/// -> supervisor retries (failure 2 of 3); last error: deadline ...".
std::string to_string(const stuck_report& r, timestamp now);

} // namespace conclave::workflow
