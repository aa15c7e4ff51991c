// DIR/status.json: a node's view of the group, replaced atomically (temporary
// file + rename) whenever it changes, so that `conclave cluster status` and
// scripts never read a half-written file. Also read back by the launcher.
#pragma once

#include "runtime/node/node_config.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

struct peer_view {
  uint64_t id = 0;
  std::string address;
  bool connected = false; ///< transport: the handshake succeeded, link up
  std::string state;      ///< the candidate's view: alive, suspected, down
};

/// The node's replica as status.json shows it (absent without --data-dir).
struct replica_summary {
  std::string role; ///< secondary, syncing or primary
  bool serving = false;
  uint64_t commit_lsn = 0;
  uint64_t applied_lsn = 0;
  uint64_t durable_lsn = 0;
  uint64_t last_lsn = 0;
  /// Chained hash of the records applied (equal on replicas at one applied lsn
  /// that applied the same records); printed in hex.
  uint64_t digest = 0;
  /// Whether the log survives a restart of the process.
  bool durable_storage = false;
  /// The newest checkpoint's lsn (0: none); since the process started:
  /// checkpoints written, checkpoint streams sent to other replicas, streamed
  /// checkpoints installed here.
  uint64_t checkpoint_lsn = 0;
  uint64_t checkpoints_written = 0;
  uint64_t snapshots_sent = 0;
  uint64_t snapshots_installed = 0;
  /// Since the process started: client retries this replica answered from
  /// the session table instead of applying them again.
  uint64_t session_duplicates = 0;
  /// The replica lost its log (damaged files moved aside) and is rebuilding
  /// it from its peers.
  bool healing = false;
  friend bool operator==(const replica_summary& a, const replica_summary& b) {
    return a.role == b.role && a.serving == b.serving && a.commit_lsn == b.commit_lsn
           && a.applied_lsn == b.applied_lsn && a.durable_lsn == b.durable_lsn
           && a.last_lsn == b.last_lsn && a.digest == b.digest
           && a.durable_storage == b.durable_storage
           && a.checkpoint_lsn == b.checkpoint_lsn
           && a.checkpoints_written == b.checkpoints_written
           && a.snapshots_sent == b.snapshots_sent
           && a.snapshots_installed == b.snapshots_installed
           && a.session_duplicates == b.session_duplicates && a.healing == b.healing;
  }
};

/// The last time this node's failure detector judged its leader silent, and
/// what it saw (status.json "last_suspicion"; absent before the first).
struct suspicion_view {
  uint64_t peer = 0;        ///< the leader judged
  std::string outcome;      ///< suspected, discounted (own timer late) or refuted
  double silence_ms = 0;    ///< since the leader's last heartbeat
  double threshold_ms = 0;  ///< the silence at which the detector suspects
  double timer_late_ms = 0; ///< how late the judging timer fired
  int64_t at_us = 0;        ///< wall clock
};

struct node_status {
  uint64_t id = 0;
  std::string cluster;
  std::string address;
  int pid = 0;
  bool running = true; ///< false once the node has shut down cleanly
  uint64_t leader = 0; ///< 0: no leader known
  uint64_t term = 0;   ///< epoch of the term the node knows
  uint64_t term_leader = 0;
  bool is_leader = false;
  bool acting = false;
  /// Wall clock (µs since the epoch) when this node adopted its current leader
  /// and term: lets tools time a failover without polling granularity.
  int64_t leader_since_us = 0;
  /// Wall clock (µs) when this node last started acting as leader (0: never):
  /// with the quorum guard a new leader acts only once a majority granted its
  /// lease, which can be later than its election.
  int64_t acting_since_us = 0;
  std::vector<peer_view> peers;
  std::optional<replica_summary> replica;
  std::optional<suspicion_view> last_suspicion;
};

std::string to_json(const node_status& s);
/// Parses a status file's content; nullopt if it is not one.
std::optional<node_status> status_from_json(const std::string& text);

/// Writes `content` to `path` atomically: PATH.tmp, then rename over PATH.
result<void> write_file_atomically(const std::string& path, const std::string& content);

/// Microseconds since the Unix epoch, now.
int64_t wall_clock_us();

/// Keeps a node_status and rewrites the file whenever it changes. Thread-safe:
/// the candidate (leader, term) and the transport (links) update it.
class status_writer {
public:
  /// `path` empty: keeps the status in memory only.
  status_writer(std::string path, node_status initial);

  void update_leadership(uint64_t leader, uint64_t term, uint64_t term_leader,
                         bool is_leader, bool acting,
                         const std::map<uint64_t, std::string>& peer_states);
  void set_connected(uint64_t peer, bool connected);
  void set_running(bool running);
  void update_replica(const replica_summary& r);
  void set_last_suspicion(const suspicion_view& v);
  node_status snapshot() const;
  /// Called with the new status after every change, under the writer's lock
  /// (so calls come in order): it must not block nor call back into the
  /// writer. Empty: none.
  void set_listener(std::function<void(const node_status&)> listener);

private:
  void write_locked();

  std::string path_;
  mutable std::mutex mtx_;
  node_status status_;
  std::string last_written_;
  std::function<void(const node_status&)> listener_;
};

} // namespace conclave::node
