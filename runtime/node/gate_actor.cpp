#include "runtime/node/gate_actor.hpp"

#include "runtime/node/liveness_watch.hpp"

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
  challenge_book challenges; ///< nonces handed out by challenge, redeemed by hello
};

using gate_self = gate_actor::stateful_pointer<gate_state>;

/// Logs and counts a refused handshake; returns the reason for the answer.
std::string refuse(peer_links& links, std::string_view reason, const std::string& cluster,
                   uint64_t id) {
  auto r = std::string{reason};
  links.probe().message_rejected(r);
  links.log("refused a handshake from node " + std::to_string(id) + " of cluster '"
            + cluster + "': " + r);
  return r;
}

/// With TLS: the dialer's proof that it is member `id` (peer_identity.hpp).
identity_refusal check_dialer(gate_self self, uint64_t id, const caf::actor& remote,
                              const std::string& gate_nonce, identity_proof proof) {
  auto& links = *self->state.links;
  if (proof.certificate_pem.empty() || proof.signature.empty())
    return identity_refusal::missing_proof; // e.g. a plaintext-style hello
  auto its_nonce = self->state.challenges.redeem(id, gate_nonce);
  if (!its_nonce)
    return identity_refusal::stale_nonce;
  proof_statement s{
      proof_role::dialing, links.members().cluster, id, links.members().self, gate_nonce,
      *its_nonce,          handle_identity(remote)};
  if (auto why = links.authenticator()->verifier.verify(proof, s);
      why != identity_refusal::none)
    return why;
  // Bound to the TLS session: the hello came over the session that speaks for
  // the candidate's node, and that session's certificate names member `id`.
  auto sender = self->current_sender();
  if (!sender || sender->node() != remote.node()
      || !links.session_is_member(remote.node(), id))
    return identity_refusal::wrong_session;
  return identity_refusal::none;
}

gate_actor::behavior_type gate_impl(gate_self self, std::shared_ptr<peer_links> links) {
  self->state.links = std::move(links);
  self->set_down_handler(
      [self](caf::down_msg& dm) { self->state.links->down(dm.source); });
  self->set_default_handler([self](caf::scheduled_actor*, caf::message_view&) {
    self->state.links->probe().message_rejected("unexpected_message");
    return caf::result<caf::message>{caf::sec::unexpected_message};
  });
  return {
      [self](challenge_atom, const std::string& cluster, uint64_t id,
             const std::string& its_nonce)
          -> caf::result<std::string, std::string, std::string, std::string,
                         std::string> {
        auto& links = *self->state.links;
        auto& m = links.members();
        auto* auth = links.authenticator();
        auto r = m.admit(cluster, id);
        if (r != rejection::none)
          return {refuse(links, to_string(r), cluster, id), "", "", "", ""};
        if (auth == nullptr || its_nonce.size() != nonce_size)
          return {refuse(links, to_string(identity_refusal::missing_proof), cluster, id),
                  "", "", "", ""};
        auto nonce = self->state.challenges.issue(id, its_nonce);
        auto candidate = handle_identity(caf::actor_cast<caf::actor>(links.candidate()));
        auto proof = auth->self.prove(
            {proof_role::accepting, m.cluster, m.self, id, its_nonce, nonce, candidate});
        return {std::string{}, nonce, proof.certificate_pem, proof.signature, candidate};
      },
      [self](hello_atom, const std::string& cluster, uint64_t id,
             const caf::actor& remote, const std::string& gate_nonce,
             const std::string& cert, const std::string& signature)
          -> caf::result<std::string, uint64_t, caf::actor, std::string> {
        auto& links = *self->state.links;
        auto& m = links.members();
        auto r = m.admit(cluster, id);
        if (r == rejection::none && !remote)
          r = rejection::unknown_node;
        if (r != rejection::none)
          return {m.cluster, m.self, caf::actor{},
                  refuse(links, to_string(r), cluster, id)};
        if (links.authenticator() != nullptr) {
          auto why = check_dialer(self, id, remote, gate_nonce, {cert, signature});
          if (why != identity_refusal::none)
            return {m.cluster, m.self, caf::actor{},
                    refuse(links, to_string(why), cluster, id)};
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
        // Bound to the hello: only the member whose candidate is linked, and
        // only a host on that candidate's node (replica_link.hpp).
        auto linked =
            caf::actor_cast<caf::actor>(links.directory()->get(election::node_id{id}));
        if (auto why = replica_peer_refusal(linked, remote_host); !why.empty()) {
          links.probe().message_rejected(why);
          links.warn("refused the replica host offered as node " + std::to_string(id)
                     + ": " + why);
          return {caf::actor{}, why};
        }
        replica->transport->set_peer(id, remote_host);
        return {replica->host, std::string{}};
      },
      [self](liveness_atom, const std::string& cluster, uint64_t id, uint64_t incarnation)
          -> caf::result<uint64_t, std::string, uint64_t, std::string> {
        auto& links = *self->state.links;
        auto r = links.members().admit(cluster, id);
        if (r != rejection::none) {
          links.probe().message_rejected(to_string(r));
          return {uint64_t{0}, std::string{}, uint64_t{0}, std::string{to_string(r)}};
        }
        auto& watch = links.liveness();
        if (!watch)
          return {uint64_t{0}, std::string{}, links.incarnation(), std::string{"off"}};
        // Bound to the hello: only from the node of the candidate linked as
        // member `id` (with TLS, the one its identity proof named).
        auto linked =
            caf::actor_cast<caf::actor>(links.directory()->get(election::node_id{id}));
        auto sender = self->current_sender();
        std::string why;
        if (!linked)
          why = "liveness_peer_not_linked";
        else if (!sender || sender->node() != linked.node())
          why = "liveness_peer_other_node";
        if (!why.empty()) {
          links.probe().message_rejected(why);
          return {uint64_t{0}, std::string{}, uint64_t{0}, why};
        }
        return {uint64_t{watch->port()}, watch->issue(id, incarnation),
                links.incarnation(), std::string{}};
      },
      [self](link_check_atom, const std::string& cluster, uint64_t id,
             const caf::actor& remote) -> bool {
        auto& links = *self->state.links;
        if (auto r = links.members().admit(cluster, id); r != rejection::none) {
          links.probe().message_rejected(to_string(r));
          return false;
        }
        return links.holds(id, remote);
      },
      [self](client_hello_atom, const std::string& cluster)
          -> caf::result<caf::actor, uint64_t, uint64_t, std::string, std::string> {
        auto& links = *self->state.links;
        auto& m = links.members();
        auto& replica = links.replica();
        if (!self->current_sender())
          // The answer can go nowhere: the connection lost its route in CAF
          // (socket_numbers.hpp). Counted, so that it shows if it comes back.
          links.probe().message_rejected("no_sender");
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
