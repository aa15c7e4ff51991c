// The network and the disks of the replication workload (`conclave sim
// --workload replication`; docs/design/simulation.md, "Replication workload").
//
// Network: the replica hosts and the election candidates of a run reach each
// other through transports that share one repl_net: the replica host's
// replica_transport (repl_link) and the candidate's election::transport
// (election_link), each bound to its node's id. A message from a to b
// - is lost while the link a→b is cut (a partition, a cut, a paused node);
// - until `heal_at`, is lost with probability `loss`, and otherwise delivered
//   twice with probability `dup`;
// - takes a delay drawn from [delay_min, delay_max] per copy (so copies and
//   consecutive messages may be reordered), as a delayed_anon_send on CAF's
//   clock — virtual under the test coordinator;
// - goes to the handle b has when it is SENT: a message in flight to a node
//   that crashes dies with that incarnation, as on a dropped connection.
// The candidates watch each other with CAF monitors (a crash is seen at once,
// a partition only as silence), as directory_transport does.
//
// Disk: sim_disk is a log_device over a memory_log_device whose syncs complete
// `fsync` of virtual time after they are asked for (a small releaser actor per
// disk, tracked by the driver). A crash drops what was appended and not synced.
// With `lying` set it is the broken disk of the checkers' meta-test: it reports
// every sync durable at once, while the records still become durable only
// after `fsync`, so a crash loses records a replica acknowledged as durable.
//
// Every random choice comes from the net's generator; everything runs on one
// test coordinator, so the draws happen in one deterministic order.
#pragma once

#include "actors/election/host.hpp"
#include "actors/replication/replica_host.hpp"
#include "storage/api/memory_log_device.hpp"

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>

#include <map>
#include <memory>
#include <random>
#include <vector>

namespace conclave::sim {

/// What the links of one run share.
struct repl_net {
  explicit repl_net(caf::actor_clock& clock) : clock(&clock) {}

  caf::actor_clock* clock;
  std::mt19937_64 rng;
  double loss = 0;
  double dup = 0;
  std::chrono::nanoseconds delay_min = std::chrono::milliseconds(1);
  std::chrono::nanoseconds delay_max = std::chrono::milliseconds(1);
  /// Loss and duplication stop here.
  caf::actor_clock::time_point heal_at;
  /// Current handles by node id (index id - 1); empty while a node is down.
  std::vector<caf::actor> hosts;
  std::vector<caf::actor> candidates;
  // -- counters --
  uint64_t messages = 0; ///< sent (each copy of a duplicate counts once)
  uint64_t lost = 0;     ///< lost to loss, a cut link or a down node
  uint64_t duplicated = 0;

  /// Cuts (up = false) or restores the link from → to. Cuts nest: a link
  /// cut twice is restored by the second restore.
  void set_link(election::node_id from, election::node_id to, bool up);
  bool link_up(election::node_id from, election::node_id to) const;

  /// The delays of the copies of one message from → to (none: lost);
  /// counts it.
  std::vector<caf::timespan> route(election::node_id from, election::node_id to);

private:
  std::map<std::pair<uint64_t, uint64_t>, int> cuts_;
};

/// The replica host's transport of node `self`.
class repl_link final : public replication::replica_transport {
public:
  repl_link(election::node_id self, std::shared_ptr<repl_net> net)
      : self_(self), net_(std::move(net)) {}
  void deliver(election::node_id to, const replication::message& m) override;
  void deliver_chunk(election::node_id to, const replication::snapshot_chunk& c) override;

private:
  /// Calls send(host, delay) once per copy the network delivers to `to`.
  template <class Send>
  void send_routed(election::node_id to, Send&& send);

  election::node_id self_;
  std::shared_ptr<repl_net> net_;
};

/// The election candidate's transport of node `self`.
class election_link final : public election::transport {
public:
  election_link(election::node_id self, std::shared_ptr<repl_net> net)
      : self_(self), net_(std::move(net)) {}
  void send(caf::local_actor* self, election::node_id to,
            const election::message& m) override;
  void watch(caf::local_actor* self, election::node_id peer) override;
  std::optional<election::node_id> node_of(const caf::actor_addr& addr) const override;

private:
  election::node_id self_;
  std::shared_ptr<repl_net> net_;
};

/// A simulated disk (see above). Not thread-safe: one host uses it at a time.
class sim_disk final : public store::log_device {
public:
  /// `releaser` completes the syncs; spawn it with spawn_disk_releaser.
  sim_disk(std::chrono::nanoseconds fsync, bool lying) : fsync_(fsync), lying_(lying) {
    inner_.set_auto_sync(false);
    inner_.set_checkpoints_wait_for_sync(true);
  }

  void set_releaser(caf::actor releaser) { releaser_ = std::move(releaser); }

  store::result<void> append(const store::log_record& r) override;
  void sync(sync_callback done) override;
  store::result<void> truncate_after(store::lsn at) override;
  store::result<void> checkpoint(std::string image, store::lsn at) override;
  store::result<void> install_snapshot(std::string image, store::lsn at) override;
  store::result<recovered> recover() override;

  /// A crash: records appended but not synced are lost (returns how many);
  /// pending syncs never complete.
  uint64_t crash();
  /// The releaser's message arrived: complete the syncs of generation `gen`.
  void release(uint64_t gen);

  uint64_t syncs() const { return inner_.syncs(); }
  /// Checkpoints written and snapshots installed on this disk (across the
  /// host's restarts).
  uint64_t checkpoints() const { return checkpoints_; }
  uint64_t installs() const { return installs_; }

private:
  store::memory_log_device inner_;
  std::chrono::nanoseconds fsync_;
  bool lying_;
  caf::actor releaser_;
  uint64_t generation_ = 0;
  store::lsn appended_;
  uint64_t checkpoints_ = 0;
  uint64_t installs_ = 0;
};

/// The actor that completes a sim_disk's syncs (holds it weakly).
caf::actor spawn_disk_releaser(caf::actor_system& sys, std::weak_ptr<sim_disk> disk);

} // namespace conclave::sim
