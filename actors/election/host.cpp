#include "actors/election/host.hpp"

#include "protocols/election/type_ids.hpp"

#include <caf/actor_cast.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>

namespace conclave::election {

timestamp caf_clock::now(caf::local_actor* self) {
  return std::chrono::duration_cast<timestamp>(self->clock().now().time_since_epoch());
}

void caf_clock::schedule(caf::local_actor* self, duration after, uint64_t generation) {
  caf::delayed_anon_send(caf::actor_cast<caf::actor>(self), after,
                         election_atoms::timer_atom::value, generation);
}

} // namespace conclave::election
