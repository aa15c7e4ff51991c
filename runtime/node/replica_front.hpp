// replica_front: the actor a node hands to clients instead of its replica
// host, and the node's watcher of that host.
//
// Clients get the front (through the gate's client hello), never the host
// itself: the host also takes leadership and peer messages, which only the
// node and its members may send. The front passes client transactions, reads
// and lists on to the host and answers with the host's answer; it measures each
// strong commit's latency (request in → acknowledgement out) for the
// conclave_replica_commit_latency_seconds histogram. Every `status_period`
// it asks the host for its status and reports it to the probe (metrics and
// status.json); also at once when the node's leadership relay has just told
// the host of a leadership change (replica_refresh_atom), and then every
// refresh_period while the host is a primary in its sync phase. Messages of any other
// type are refused (unexpected_message) and counted as rejected by the probe.
//
// With a leadership board (replica_leadership.hpp) the front also follows the
// node's candidate: on each status, a host that promised a term above the one
// the candidate acts in makes the front send the candidate that epoch
// (observe_atom) so it leads above it; and a read or list the host answers as
// primary is passed on only if the candidate acted in the same term when the
// request came in and when the answer came back. Otherwise (a primary that
// lost its lease: another node may lead and commit already) the client gets
// `not_primary`, role secondary, no value and no primary named.
#pragma once

#include "actors/timer/host_clock.hpp"
#include "runtime/node/node_probe.hpp"
#include "runtime/node/replica_leadership.hpp"
#include "runtime/node/replica_link.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>

namespace conclave::node {

struct replica_front_options {
  caf::actor host;
  std::shared_ptr<node_probe> probe;
  std::shared_ptr<replication::replica_transport> transport;
  /// Whether the host's log survives a restart (reported in status.json).
  bool durable_storage = false;
  std::chrono::milliseconds status_period{200};
  /// How soon the status is asked again while the host is a primary in its
  /// sync phase (after a replica_refresh_atom or a poll that found it so).
  std::chrono::milliseconds refresh_period{5};
  /// How long a client's transaction may wait for the host (a strong commit
  /// waits for a majority). Past it the client gets primary_changed: checked
  /// on each status tick, so after host_timeout and at most status_period
  /// more. (Reads and lists are answered by the host at once.)
  std::chrono::milliseconds host_timeout{5000};
  /// The candidate's leadership (none: reads are passed on unchecked and no
  /// epoch is sent to the candidate).
  std::shared_ptr<leadership_board> board;
  /// The candidate's clock, against which the board's lease is read (null:
  /// CAF's, the candidate's default).
  std::shared_ptr<host_clock> clock;
  /// Simulator only (a planted defect its checkers must catch): a primary's
  /// reads are passed on without checking that the candidate acts.
  bool unsafe_reads_without_lease = false;
};

/// Whether a read the host answered in role `answered_as` may reach the
/// client: a primary's answer only if the candidate acted in one term
/// (`before` the request and `after` the answer are that term).
bool read_allowed(replication::role answered_as,
                  const std::optional<election::term>& before,
                  const std::optional<election::term>& after);

caf::actor spawn_replica_front(caf::actor_system& sys, replica_front_options opts);

} // namespace conclave::node
