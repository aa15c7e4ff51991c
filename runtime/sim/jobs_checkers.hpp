// The checkers of the jobs workload (docs/design/simulation.md, "Jobs workload"):
// each is a separate piece that reads what a run left behind — every job's
// final record, its event stream, the test service's effect counts — and
// names what is wrong. None of them is part of the run; a fixture that breaks
// one property makes exactly its checker complain (jobs_checkers.test.cpp).
//
//   final_within_bound        every job reaches processed, error, compensated
//                             or cancelled by heal + bound (liveness); a job
//                             that does not is shown with its "why is it
//                             stuck" view (protocols/workflow/explain.hpp)
//   one_completion_per_step   no step (forward or compensation) is recorded
//                             completed twice, for two attempts or one
//   no_stale_completion       a completion is recorded only for the attempt
//                             last dispatched (no late reply of an older
//                             attempt accepted)
//   recovery_of_current_attempt
//                             a recovery ends the step's current attempt,
//                             once (none lands on a newer attempt: the
//                             supervisor's writes keep the attempt fence)
//   reverse_compensation      compensations complete in the reverse order of
//                             the forward completions they undo
//   one_effect_per_key        the service applied at most one effect per
//                             idempotency key, and every step recorded
//                             completed took effect
//   one_dispatch_per_attempt  no attempt of a step is dispatched twice (each
//                             claim or resume makes a new attempt, so two
//                             dispatches of one attempt are two schedulers
//                             holding one claim: a lost update). With an
//                             idempotent service no other checker sees it
//   list_by_state             the client's list of every state names each job
//                             under its document's state, once
//   indexes_in_step           the wf.state, wf.ready and wf.due rows are
//                             exactly those a fresh write of every job's
//                             final document would make (no stale row, none
//                             missing)
#pragma once

#include "protocols/workflow/records.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conclave::sim {

/// One job as a run left it.
struct job_trace {
  workflow::job_id id;
  /// The job and its steps at the end (none if it could not be read).
  std::optional<workflow::job_view> view;
  /// Every event of the job, in order.
  std::vector<workflow::job_event> events;
};

/// What the checkers read.
struct jobs_observation {
  std::vector<job_trace> jobs;
  /// Per idempotency key: how often the service applied it.
  std::map<std::string, int> effects;
  /// Per dispatched attempt ("JOB step|undo N attempt A"): how often a
  /// scheduler sent it.
  std::map<std::string, int> dispatches;
  /// Run time at which faults healed, and the time the jobs then have.
  workflow::timestamp heal{0};
  workflow::duration bound{0};
  /// Job times (events, records) minus this = run time.
  workflow::timestamp origin{0};
  /// Job time at which the run ended (for the "why is it stuck" view).
  workflow::timestamp now{0};
  /// Liveness is judged only if, once faults healed, a majority of the nodes
  /// (the replicated store's quorum) was up with its log: a crash without a
  /// restart never heals, a refused start leaves its node down, and a node
  /// that moved a damaged log aside waits to rebuild it from the peers.
  bool judge_liveness = true;
  /// The client's `list` for each state (by step_state value) at the end of
  /// the run; unset if the run did not read it.
  std::optional<std::map<uint8_t, std::vector<workflow::job_id>>> listed;
  /// Every key of the index collections (wf.state, wf.ready, wf.due) at the
  /// end of the run, by collection; unset if the run did not read them.
  std::optional<std::map<std::string, std::vector<std::string>>> index_rows;
};

struct jobs_violation {
  std::string checker;
  std::string what;
  /// Safety (exit status 3) or liveness (exit status 1).
  bool safety = true;
};

class jobs_checker {
public:
  virtual ~jobs_checker() = default;
  virtual const char* name() const = 0;
  virtual bool safety() const { return true; }
  /// Appends one line per problem found.
  virtual void check(const jobs_observation& obs,
                     std::vector<std::string>& out) const = 0;
};

/// The nine checkers above, in that order.
std::vector<std::unique_ptr<jobs_checker>> standard_jobs_checkers();

/// Runs every checker on `obs`.
std::vector<jobs_violation>
run_checkers(const std::vector<std::unique_ptr<jobs_checker>>& checkers,
             const jobs_observation& obs);

} // namespace conclave::sim
