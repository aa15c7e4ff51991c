// How the workflow actors read time and arm their timers: through the host
// clock of their options (actors/timer/host_clock.hpp) when they have one (the
// simulated world gives its node's drifting clock), else through CAF's clock.
#pragma once

#include "actors/timer/host_clock.hpp"
#include "protocols/workflow/types.hpp"

#include <caf/local_actor.hpp>
#include <caf/make_message.hpp>

#include <memory>
#include <utility>

namespace conclave::workflow {

/// Workflow time: the clock's reading plus `offset` (see the options'
/// clock_offset).
inline timestamp host_now(const std::shared_ptr<host_clock>& clock,
                          caf::local_actor* self, duration offset) {
  return std::chrono::duration_cast<timestamp>(clock_now(clock.get(), self)) + offset;
}

/// Sends `xs...` to `self` after `after` on the clock (CAF's delayed_send if
/// null).
template <class Self, class... Ts>
void send_later(Self* self, const std::shared_ptr<host_clock>& clock, duration after,
                Ts&&... xs) {
  if (clock) {
    clock->send_later(self, after, caf::make_message(std::forward<Ts>(xs)...));
    return;
  }
  self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(after),
                     std::forward<Ts>(xs)...);
}

} // namespace conclave::workflow
