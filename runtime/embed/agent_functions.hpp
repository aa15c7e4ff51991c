// An agent kind's function (include/conclave/workflow.hpp) as a workflow
// service actor: detached (its own thread), so the function may block; one
// call at a time per actor.
#pragma once

#include "actors/workflow/interfaces.hpp"
#include "conclave/workflow.hpp"

#include <caf/fwd.hpp>

namespace conclave::embed {

/// The service_call as the facade shows it: workflow timestamps are
/// wall-clock on a node (workflow_host.hpp), so the deadline is one too.
step_call to_step_call(const workflow::service_call& c);

/// The facade's result as an outcome.
workflow::step_outcome to_outcome(const step_result& r);

/// Spawns a detached service actor calling `fn` (an exception it throws is
/// a transient failure).
workflow::service_actor spawn_function_service(caf::actor_system& sys, agent_function fn);

} // namespace conclave::embed
