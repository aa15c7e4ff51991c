// replica_host: one member of a replica set as a thread-free actor. It owns a
// replica_core (protocols/replication), writes the replicated log to a store
// log_device, keeps its promised term in a term_file, sends the core's
// messages through a replica_transport, and applies committed records to a
// store_core (protocols/store) that clients read.
//
// Why a store_core and not a store_host: store_host is itself an actor with its
// own log device that logs and replays every commit. Under replication the log
// is the replicated one, and a record may be applied only once the core says it
// is committed; putting a store_host behind the replica host would make two
// hosts, two logs and two recoveries of one store. The replica host is the
// store's one host for a replicated store.
//
// Host contract (docs/design/replication.md): after every input it executes the
// core's effects in order (persist_term in the term file before anything is
// sent, append_records and truncate_after on the device, apply_through on the
// store core, commit_acked / txn_failed answer the client), then sends the
// outbox, then arms one timer (delayed_send, tagged with a generation) for
// the core's next deadline on the actor clock, virtual under CAF's test
// coordinator. Appended records are synced with one sync in flight at a
// time (group commit); the completion arrives as a message and becomes
// log_durable. Proposals are flushed by a message the host sends itself, so
// proposals already in the mailbox share one append.
//
// Messages (untyped actor; types in type_ids.hpp):
//   sync_request ... stale_term        from peers, fed to the core
//   become_primary_msg{t}   -> bool    start the sync phase as leader of t
//   leader_is_msg{t}        -> bool    step down if leading and t.leader is
//                                      another node (true if it stepped down)
//   txn_request             -> txn_result (strong: after majority durable,
//                                      with each op's output; weak: after
//                                      durable here; a secondary answers
//                                      not_primary with the primary; bad
//                                      requests are refused before proposing)
//   read_request            -> read_result (snapshot read of applied state)
//   list_request            -> list_result (keys by prefix, bounded, same
//                                      snapshot of applied state)
//   status_atom             -> replica_status
// Messages of any other type are dropped and counted (unknown_messages).
//
// Client transactions (txn_apply.hpp) hold puts, removes, enqueues, dequeues
// and conditions (expect_value / expect_absent). They are checked before
// proposing and applied on every replica once committed; a dequeue's item and
// a condition's verdict are decided by the record's place in the committed
// log, so every replica decides alike, and the primary answers a strong
// transaction with each op's output after applying it.
//
// Checkpoints (checkpoint_image.hpp): once the log since the last checkpoint
// holds checkpoint_every_records records or checkpoint_every_bytes bytes
// (entry_bytes), or when asked (checkpoint_atom), the host encodes its
// applied state at lsn L = its applied lsn (only when L is durable here, so
// L <= commit and the device holds every record through L), writes it with
// log_device::checkpoint, asks the device for a sync, and tells the core
// checkpointed(L), which drops the records through L from its log. A failed
// checkpoint is counted, not fatal. On start the host loads the device's
// checkpoint (a checkpoint that does not decode stops the host: failed) and
// the records after it.
//
// Snapshot streaming: on send_snapshot{to, at} the host sends its
// checkpoint at `at` as snapshot_chunk messages of at most
// snapshot_chunk_bytes each, in order. The receiver keeps one stream per
// sender, drops and counts chunks that are out of order, from a
// non-member, under a term lower than promised, or past
// max_snapshot_bytes, checks the reassembled image (checksum, lsn and term
// as announced) and offers it to its core (snapshot_offered). If the core
// takes it, the host installs it durably (log_device::install_snapshot:
// checkpoint replaced, log empty after `at`) BEFORE it sends the core's
// acknowledgement, and replaces its store state and digest with the
// image's. Lost chunks are recovered by the core's snapshot_retry (the
// sender streams again).
#pragma once

#include "actors/replication/commit_observer.hpp"
#include "actors/replication/lease_table.hpp"
#include "actors/replication/type_ids.hpp"
#include "actors/timer/host_clock.hpp"
#include "protocols/replication/replica_core.hpp"
#include "protocols/store/store_core.hpp"
#include "storage/api/log_device.hpp"
#include "storage/api/term_file.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace conclave::replication {

/// A term file in memory (tests): every save is durable at once and survives
/// a host's restart as long as the object lives.
class memory_term_file final : public term_file {
public:
  store::result<void> save(const term& t) override;
  term load() const override { return t_; }
  uint64_t saves() const { return saves_; }

private:
  term t_;
  uint64_t saves_ = 0;
};

/// How a host reaches its peers. The node will plug its peer links in here.
class replica_transport {
public:
  virtual ~replica_transport() = default;
  virtual void deliver(node_id to, const message& m) = 0;
  /// A piece of a checkpoint stream (replica_host.hpp).
  virtual void deliver_chunk(node_id to, const snapshot_chunk& c) = 0;
  /// Messages lost on the way (no route to the peer, a cut link), and records
  /// shipped in append messages, retransmissions included: totals that only
  /// grow (0 where the transport does not count them).
  virtual uint64_t lost() const { return 0; }
  virtual uint64_t records_shipped() const { return 0; }
};

/// Sends to peer actors in the same actor system (or remote handles). Links
/// can be cut (a partition in tests): what is sent over a cut link is lost
/// and counted. Not thread-safe: change peers and links before the hosts run
/// or, under CAF's test coordinator, between scheduler steps.
class actor_transport final : public replica_transport {
public:
  void set_peer(node_id id, caf::actor handle) { peers_[id] = std::move(handle); }
  void set_link(node_id id, bool up) { down_[id] = !up; }
  void deliver(node_id to, const message& m) override;
  void deliver_chunk(node_id to, const snapshot_chunk& c) override;
  /// Messages lost: no handle for the peer, or its link cut.
  uint64_t lost() const override { return lost_; }

private:
  std::map<node_id, caf::actor> peers_;
  std::map<node_id, bool> down_;
  uint64_t lost_ = 0;
};

struct replica_host_options {
  node_id self;
  /// Every member, self included.
  std::vector<node_id> members;
  replica_config config;
  std::shared_ptr<store::log_device> device;
  std::shared_ptr<term_file> terms;
  std::shared_ptr<replica_transport> transport;
  store::core_limits limits;
  /// Bounds of one list_request's answer: items, and bytes of keys and values
  /// (at least one item is returned whatever its size).
  uint32_t max_list_items = 1000;
  size_t max_list_bytes = 1u << 20;
  /// Checkpoint once the log since the last checkpoint holds this many
  /// records, or this many bytes (entry_bytes); 0 disables that trigger
  /// (both 0: only on request).
  uint64_t checkpoint_every_records = 100000;
  uint64_t checkpoint_every_bytes = 64u << 20;
  /// Largest piece of a streamed checkpoint, and the largest checkpoint a
  /// host accepts from a peer (chunks past it are dropped).
  size_t snapshot_chunk_bytes = 256u << 10;
  uint64_t max_snapshot_bytes = 4ull << 30;
  /// When the acting primary frees the slot of a holder that stopped
  /// renewing (lease_table.hpp).
  lease_timing lease;
  /// How the host reads time and arms its timer (null: CAF's clock). The
  /// simulator gives each host its node's own drifting clock.
  std::shared_ptr<host_clock> clock;
  /// Most acquires waiting at the primary, all leases together; past it an
  /// acquire is answered lease_busy at once (memory stays bounded whatever
  /// clients send).
  size_t max_lease_waiters = 100000;
  /// The clock a primary stamps into sessioned records, in ms since the
  /// epoch (session_table.hpp: idle sessions expire by these stamps).
  /// Unset: the system clock.
  std::function<int64_t()> session_clock_ms;
  /// Only for the simulator's meta-test, which shows the checkers catch a
  /// broken install: an installed checkpoint replaces the log and the
  /// digest but the host keeps its old store state.
  bool unsafe_install_keeps_state = false;
  /// The replica lost its log (the storage moved damaged files aside and
  /// marked it): it rejoins amnesiac (replica_core::amnesiac()), and
  /// `healed` runs once, from the host's thread, when its log is rebuilt and
  /// durable (the storage then removes the mark).
  bool amnesiac = false;
  std::function<void()> healed;
  /// Called once, from the host's thread, when the host fails: its log
  /// device or term file failed (at start or later) and it accepts nothing
  /// more. A replica that cannot keep its promises must not stay in the
  /// group: `conclave node` leaves it and exits 1; the simulator takes the
  /// node down. The argument says what failed.
  std::function<void(const std::string&)> on_failure;
  /// Told of each applied record's writes to its watched collections and
  /// its lease grants and releases (commit_observer.hpp); null: nothing is
  /// reported and nothing extra is read.
  std::shared_ptr<commit_observer> observer;
};

/// Spawns a host after recovering its term file and device.
caf::actor spawn_replica_host(caf::actor_system& sys, replica_host_options opts);

} // namespace conclave::replication
