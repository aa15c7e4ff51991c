#include "actors/election/leader_task.hpp"

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>

namespace conclave::election {

leader_task leader_task::from_actor(actor_factory f) {
  leader_task t;
  t.factory_ = std::move(f);
  return t;
}

leader_task leader_task::from_function(function f) {
  return from_actor([f = std::move(f)](caf::actor_system& sys, leader_context ctx) {
    return caf::actor_cast<caf::actor>(
        sys.spawn([f, ctx](caf::blocking_actor*) { f(ctx); }));
  });
}

caf::actor leader_task::start(caf::actor_system& sys, const leader_context& ctx) const {
  return factory_ ? factory_(sys, ctx) : caf::actor{};
}

} // namespace conclave::election
