// The gate: the one actor a node publishes on its listen port. A dialing member
// asks it (hello_atom, cluster, id, its candidate, proof) and gets back
// (cluster, id, candidate of this node, rejection); rejection is empty when
// admitted. With TLS the dialer first asks (challenge_atom, cluster, id, its
// nonce) and gets (rejection, the gate's nonce, the gate's certificate and
// signature, the identity of the gate's candidate): each side proves which
// member it is (peer_identity.hpp); the hello then carries the dialer's proof
// (gate nonce, certificate, signature; all empty in plaintext). The gate admits
// only members of the same cluster (membership.hpp) that proved their id (with
// TLS), monitors the remote candidate and unlinks it when its connection drops.
//
// Replica (when the node hosts one, replica_link.hpp):
//   (replica_hello_atom, cluster, id, host) -> (this node's host, rejection):
//     a member that passed the hello gives its replica host and gets ours.
//   (client_hello_atom, cluster) -> (front, this node's id, primary id,
//     primary address, rejection): a client (conclave kv) gets the actor that
//     takes its transactions and reads (replica_front.hpp), and the primary as
//     this node knows it (0 and "" when unknown). Rejection: wrong_cluster,
//     no_replica (the node runs without --data-dir).
//
// Liveness (with proofs of death on, liveness_watch.hpp):
//   (liveness_atom, cluster, id, its incarnation) -> (port, nonce, this node's
//     incarnation, rejection): a member linked by the hello, asking from the
//     node of its linked candidate, gets a one-time ticket for a liveness
//     connection to this node. Rejection: off (proofs of death are off here),
//     liveness_peer_not_linked, liveness_peer_other_node.
//
// Link check (the dialer, while linked, every connector_options::check_interval):
//   (link_check_atom, cluster, id, its candidate) -> whether this gate still
//     holds that candidate as member `id`. CAF 0.17.6 keeps a node's proxies
//     alive while any connection to that node is open, and a node's own
//     clients (its workflows' store client) dial every member: when the link's
//     connection ends, the dialer can go on believing it is linked while the
//     gate unlinked it and sends it nothing. On "no", the dialer links again.
#pragma once

#include "runtime/node/peer_links.hpp"

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <memory>
#include <string>

namespace conclave::node {

using gate_actor = caf::typed_actor<
    caf::replies_to<challenge_atom, std::string, uint64_t, std::string>::with<
        std::string, std::string, std::string, std::string, std::string>,
    caf::replies_to<hello_atom, std::string, uint64_t, caf::actor, std::string,
                    std::string,
                    std::string>::with<std::string, uint64_t, caf::actor, std::string>,
    caf::replies_to<replica_hello_atom, std::string, uint64_t,
                    caf::actor>::with<caf::actor, std::string>,
    caf::replies_to<client_hello_atom, std::string>::with<caf::actor, uint64_t, uint64_t,
                                                          std::string, std::string>,
    caf::replies_to<liveness_atom, std::string, uint64_t,
                    uint64_t>::with<uint64_t, std::string, uint64_t, std::string>,
    caf::replies_to<link_check_atom, std::string, uint64_t, caf::actor>::with<bool>>;

gate_actor spawn_gate(caf::actor_system& sys, std::shared_ptr<peer_links> links);

} // namespace conclave::node
