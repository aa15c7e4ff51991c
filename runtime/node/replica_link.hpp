// The node's side of its replica: how the replica host reaches the other
// members' hosts over the peer links, and what the gate and the connectors
// need to exchange host handles.
//
// Transport: after the membership handshake (hello), the dialing side's
// connector sends the gate a replica hello with its host handle and gets the
// gate side's host handle back (gate_actor.hpp), so both sides learn the
// other's host over the link that the election already uses. Messages to a
// member whose host handle is not known yet are lost and counted; the core
// retransmits. Whatever arrives at a host is checked there (non-members,
// stale terms, gaps: dropped and counted by the core).
//
// The exchange is bound to the membership hello: a host handle is taken for
// member `id` only while `id` is linked (its hello passed, with TLS its
// identity proven) and only if the host lives on the same CAF node as the
// candidate that passed that hello (replica_peer_refusal); both the gate and
// the dialer check it. Otherwise the exchange is refused, logged and counted
// (conclave_rejected_messages_total, reasons below).
#pragma once

#include "actors/replication/replica_host.hpp"

#include <caf/actor.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace conclave::node {

/// replica_transport over remote host handles. Thread-safe: the gate and the
/// connectors set handles on their threads while the host sends on its own.
class peer_replica_transport final : public replication::replica_transport {
public:
  void deliver(replication::node_id to, const replication::message& m) override;
  void deliver_chunk(replication::node_id to,
                     const replication::snapshot_chunk& c) override;

  /// The host of member `id` is `host` (replaces an older handle).
  void set_peer(uint64_t id, caf::actor host);
  /// Whether a host handle of `id` is known.
  bool knows(uint64_t id) const;

  /// Messages lost: no handle for the member yet.
  uint64_t lost() const override { return lost_.load(); }
  /// Records shipped in append messages (retransmissions included).
  uint64_t records_shipped() const override { return shipped_.load(); }

private:
  /// The peer's replica host, or an invalid handle (counted lost) if unknown.
  caf::actor dest_of(replication::node_id to);

  mutable std::mutex mtx_;
  std::map<uint64_t, caf::actor> peers_;
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> shipped_{0};
};

/// What the gate and connectors need of the local replica. Absent (null) when
/// the node hosts no replica (no --data-dir).
class leadership_board;

/// Why a replica host handle offered for a member is refused ("" if it is
/// taken): `replica_peer_not_linked` (no candidate passed the hello for that
/// member), `replica_peer_other_node` (the host is not on the candidate's CAF
/// node), `unknown_node` (no host).
std::string replica_peer_refusal(const caf::actor& linked_candidate,
                                 const caf::actor& offered_host);

struct replica_endpoint {
  /// The local host: handed to peers.
  caf::actor host;
  /// The actor clients talk to (replica_front.hpp): handed to clients.
  caf::actor front;
  std::shared_ptr<peer_replica_transport> transport;
  /// The primary as this node knows it (0: unknown) and its address ("" if
  /// unknown): given to clients with the front.
  std::function<std::pair<uint64_t, std::string>()> primary;
  /// Whether the candidate acts (written by its leadership relay, read by
  /// the front; replica_leadership.hpp).
  std::shared_ptr<leadership_board> board;
};

} // namespace conclave::node
