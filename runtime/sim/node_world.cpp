#include "runtime/sim/node_world.hpp"

#include "protocols/election/messages.hpp"
#include "protocols/election/type_ids.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/make_message.hpp>

#include <variant>

namespace conclave::sim {

void world_election_transport::send(caf::local_actor*, node_id to,
                                    const election::message& m) {
  std::visit(
      [&](const auto& x) { w_.send(self_, to, caf::make_message(x), candidate_port); },
      m);
}

void world_replica_transport::deliver(node_id to, const replication::message& m) {
  if (auto* a = std::get_if<replication::append>(&m))
    shipped_ += a->entries.size();
  std::visit([&](const auto& x) { w_.send(self_, to, caf::make_message(x), host_port); },
             m);
}

void world_replica_transport::deliver_chunk(node_id to,
                                            const replication::snapshot_chunk& c) {
  w_.send(self_, to, caf::make_message(c), host_port);
}

void set_node_notices(world& w, duration delay) {
  w.set_notices(
      [](node_id peer, bool up) {
        return up ? caf::make_message(election_atoms::peer_up_atom::value, peer)
                  : caf::make_message(election_atoms::peer_down_atom::value, peer);
      },
      delay);
}

node_body refused_node_body(caf::actor_system& sys) {
  node_body b;
  b.actor = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop);
    return {[](int) {}};
  });
  return b;
}

} // namespace conclave::sim
