// The typed interfaces of the workflow actors (docs/patterns.md, "Scheduler Agent
// Supervisor"), declared before their implementations so that each actor's
// protocol reads in one place. Implementations: agent.hpp, scheduler.hpp,
// supervisor.hpp, client.hpp, test_service.hpp.
//
//   scheduler → agent    dispatch -> step_outcome  (or no reply at all: the
//                        agent gives up at the deadline; the scheduler's
//                        request then simply times out and changes nothing)
//   agent → service      service_call -> step_outcome (a user's service actor)
//   agent → self         (retry_atom, token)  backoff timer
//   scheduler → self     (poll_atom, generation)  look for claimable work
//                        (flush_atom)  send the outcomes collected so far
//   supervisor           leadership_event  from its election candidate
//                        (scan_atom, generation)  scan the CompleteBy index
//                        (watch_atom, id, handle, is_scheduler) monitor an
//                        agent (id = agent id) or a scheduler (id = instance)
//   user → client        see client_actor below
#pragma once

#include "actors/workflow/type_ids.hpp"
#include "protocols/election/type_ids.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <vector>

namespace conclave::workflow {

using service_actor = caf::typed_actor<caf::replies_to<service_call>::with<step_outcome>>;

using agent_actor =
    caf::typed_actor<caf::replies_to<dispatch>::with<step_outcome>,
                     caf::reacts_to<workflow_atoms::retry_atom, uint64_t>>;

using scheduler_actor =
    caf::typed_actor<caf::reacts_to<workflow_atoms::start_atom>,
                     caf::reacts_to<workflow_atoms::poll_atom, uint64_t>,
                     caf::reacts_to<workflow_atoms::flush_atom>>;

using supervisor_actor = caf::typed_actor<
    caf::reacts_to<election::leadership_event>,
    caf::reacts_to<workflow_atoms::scan_atom, uint64_t>,
    caf::reacts_to<workflow_atoms::watch_atom, uint64_t, caf::actor, bool>>;

/// The application's side:
///   (submit_atom, job_spec) -> job_id          job + steps + indexes in one
///                                              transaction ("received" is derived
///                                              from the job record); typed errors
///                                              for bad input
///   (get_atom, job_id) -> job_view
///   (list_atom, step_state) -> vector<job_id>  jobs in that state
///   (events_atom, job_id, from_seq) -> vector<job_event>
///   (events_atom, job_id, subscriber) -> bool   subscribe: every event of the
///                                              job, from its first, is pushed
///                                              to `subscriber` as
///                                              (events_atom, job_event), in
///                                              sequence order, once each
///   (unsubscribe_atom, job_id, subscriber) -> bool  ends those pushes (every
///                                              subscription of `subscriber` to
///                                              the job); false if it had none.
///                                              A subscriber that terminates is
///                                              unsubscribed from every job.
///   (events_atom, vector<job_event>)           published by the job stores of
///                                              schedulers, supervisors and the
///                                              client after each commit
///   (cancel_atom, job_id) -> job_state         the job's state after the cancel
///   (resubmit_atom, job_id) -> job_state
///   (explain_atom, job_id) -> stuck_report     "why is it stuck"
///   (explain_atom) -> vector<stuck_report>     every non-final job
using client_actor = caf::typed_actor<
    caf::replies_to<workflow_atoms::submit_atom, job_spec>::with<job_id>,
    caf::replies_to<caf::get_atom, job_id>::with<job_view>,
    caf::replies_to<workflow_atoms::list_atom, step_state>::with<std::vector<job_id>>,
    caf::replies_to<workflow_atoms::events_atom, job_id,
                    uint64_t>::with<std::vector<job_event>>,
    caf::replies_to<workflow_atoms::events_atom, job_id, caf::actor>::with<bool>,
    caf::replies_to<workflow_atoms::unsubscribe_atom, job_id, caf::actor>::with<bool>,
    caf::reacts_to<workflow_atoms::events_atom, std::vector<job_event>>,
    caf::replies_to<workflow_atoms::cancel_atom, job_id>::with<step_state>,
    caf::replies_to<workflow_atoms::resubmit_atom, job_id>::with<step_state>,
    caf::replies_to<workflow_atoms::explain_atom, job_id>::with<stuck_report>,
    caf::replies_to<workflow_atoms::explain_atom>::with<std::vector<stuck_report>>>;

} // namespace conclave::workflow
