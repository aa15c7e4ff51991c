#include "runtime/node/gate_actor.hpp"

#include "runtime/node/replica_link.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace conclave::node {

namespace {

struct gate_state {
  static inline const char* name = "conclave.gate";
  std::shared_ptr<peer_links> links;
};

gate_actor::behavior_type gate_impl(gate_actor::stateful_pointer<gate_state> self,
                                    std::shared_ptr<peer_links> links) {
  self->state.links = std::move(links);
  self->set_down_handler(
      [self](caf::down_msg& dm) { self->state.links->down(dm.source); });
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view&) {
    self->state.links->probe().message_rejected("unexpected_message");
    return caf::result<caf::message>{caf::sec::unexpected_message};
  });
  return {
      [self](hello_atom, const std::string& cluster, uint64_t id,
             const caf::actor& remote)
          -> caf::result<std::string, uint64_t, caf::actor, std::string> {
        auto& links = *self->state.links;
        auto& m = links.members();
        auto r = m.admit(cluster, id);
        if (r == rejection::none && !remote)
          r = rejection::unknown_node;
        if (r != rejection::none) {
          auto reason = std::string{to_string(r)};
          links.probe().message_rejected(reason);
          links.log("refused a handshake from node " + std::to_string(id)
                    + " of cluster '" + cluster + "': " + reason);
          return {m.cluster, m.self, caf::actor{}, reason};
        }
        self->monitor(remote);
        links.up(id, remote);
        return {m.cluster, m.self, caf::actor_cast<caf::actor>(links.candidate()),
                std::string{}};
      },
      [self](replica_hello_atom, const std::string& cluster, uint64_t id,
             const caf::actor& remote_host) -> caf::result<caf::actor, std::string> {
        auto& links = *self->state.links;
        auto& replica = links.replica();
        auto r = links.members().admit(cluster, id);
        if (r == rejection::none && !remote_host)
          r = rejection::unknown_node;
        if (r != rejection::none) {
          links.probe().message_rejected(to_string(r));
          return {caf::actor{}, std::string{to_string(r)}};
        }
        if (!replica)
          return {caf::actor{}, std::string{"no_replica"}};
        replica->transport->set_peer(id, remote_host);
        return {replica->host, std::string{}};
      },
      [self](client_hello_atom, const std::string& cluster)
          -> caf::result<caf::actor, uint64_t, uint64_t, std::string, std::string> {
        auto& links = *self->state.links;
        auto& m = links.members();
        auto& replica = links.replica();
        if (cluster != m.cluster) {
          links.probe().message_rejected("wrong_cluster");
          return {caf::actor{}, m.self, uint64_t{0}, std::string{},
                  std::string{"wrong_cluster"}};
        }
        if (!replica)
          return {caf::actor{}, m.self, uint64_t{0}, std::string{},
                  std::string{"no_replica"}};
        auto [primary, address] = replica->primary();
        return {replica->front, m.self, primary, address, std::string{}};
      },
  };
}

} // namespace

gate_actor spawn_gate(caf::actor_system& sys, std::shared_ptr<peer_links> links) {
  return sys.spawn(gate_impl, std::move(links));
}

} // namespace conclave::node
