// The workflow time base as the built-in services see it: the actor clock's
// time_since_epoch plus builtin_options::clock_offset (builtin_agents.hpp).
#pragma once

#include "protocols/workflow/types.hpp"

#include <caf/actor_clock.hpp>
#include <caf/local_actor.hpp>

#include <chrono>

namespace conclave::agents {

/// Now, in the time base of service_call::deadline.
inline workflow::timestamp workflow_now(caf::local_actor* self,
                                        workflow::duration clock_offset) {
  return std::chrono::duration_cast<workflow::timestamp>(
             self->clock().now().time_since_epoch())
         + clock_offset;
}

} // namespace conclave::agents
