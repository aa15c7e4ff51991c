// node_probe: every metric of a node (prometheus-cpp registry) and its
// status.json, fed by the candidate (election_probe hooks) and by the transport
// (links up and down, rejected handshakes). Thread-safe: prometheus-cpp metrics
// are atomic, the status writer has its own lock, the rest is guarded here.
//
// One source per figure: message, leader-change and stale-claim counts are the
// core's own counters (core_stats), copied into the metrics after every input;
// elections by reason come from the core's events (the core counts only the
// total). Every labelled series exists at 0 from the start, so increase() sees
// the first failover. What a scrape must see at the moment of the scrape (how
// long the leader has been silent) is computed then, by live_metrics().
//
// Metric names: docs/reference/metrics.md.
#pragma once

#include "actors/election/election_probe.hpp"
#include "runtime/node/node_log.hpp"
#include "runtime/node/round_trip_watch.hpp"
#include "runtime/node/status_file.hpp"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace conclave::node {

/// The probe's clock (a seam for tests): monotonic, read when an input arrives
/// and when Prometheus scrapes.
using steady_now_fn = std::function<std::chrono::steady_clock::time_point()>;

class node_probe final : public election::election_probe {
public:
  node_probe(
      const node_config& cfg, std::shared_ptr<status_writer> status,
      steady_now_fn now = [] { return std::chrono::steady_clock::now(); });

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  /// Where leadership events are logged (one line each); none by default.
  void set_log(std::shared_ptr<const node_log> log) { log_ = std::move(log); }

  // -- election_probe -------------------------------------------------------
  void event(const election::election_event& e, election::timestamp now) override;
  void message_received(size_t type) override;
  void message_rejected(std::string_view reason) override;
  void timer_fired(election::duration lateness, bool leader) override;
  void state(const election::candidate_core& core, election::timestamp now) override;

  // -- transport ------------------------------------------------------------
  void peer_link(uint64_t peer, bool up);

  // -- replica (replica_front polls the host) ---------------------------------
  /// One secondary's lag as the primary sees it.
  struct replica_lag {
    uint64_t peer = 0;
    uint64_t records = 0;
    uint64_t bytes = 0;
    double seconds = 0;
  };
  /// The replica host's state, polled: role and lsns (gauges and
  /// status.json), lag per secondary (a secondary's lag series are 0 while
  /// this node is not primary), finished sync phases and their duration,
  /// records shipped (a total that only grows).
  struct replica_report {
    replica_summary summary;
    std::vector<replica_lag> lag;
    uint64_t syncs = 0;
    double last_sync_seconds = 0;
    uint64_t records_shipped = 0;
    uint64_t messages_lost = 0;
    /// Replication messages the host dropped, totals by reason (the core's
    /// drop reasons and unknown_type).
    std::map<std::string, uint64_t> dropped;
  };
  void replica(const replica_report& r);
  /// A strong commit acknowledged to a client, `seconds` after the request
  /// reached the node.
  void quorum_commit(double seconds);

  /// Follower: seconds since its leader's last heartbeat (or since it adopted
  /// that leader); 0 on a leader and while no leader is known.
  double leader_silence_seconds() const;
  /// Seconds since the candidate last received a message from each member
  /// (or since it started), as of now; empty before its first input.
  std::map<uint64_t, double> peer_silence_seconds() const;

  /// The lag per secondary from the last replica report (empty while this
  /// node is not primary or hosts no replica).
  std::vector<replica_lag> replica_lags() const;

private:
  prometheus::Counter& elections(std::string_view reason);
  void log_event(const election::election_event& e) const;
  void copy_core_stats(const election::core_stats& s);
  void record_suspicion(const election::election_event& e);

  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<status_writer> status_;
  steady_now_fn now_;
  uint64_t self_;
  std::string algorithm_;
  std::vector<uint64_t> peers_;
  size_t heartbeat_type_;

  prometheus::Gauge* is_leader_;
  prometheus::Gauge* acting_;
  prometheus::Gauge* term_;
  prometheus::Gauge* term_leader_;
  prometheus::Family<prometheus::Counter>* elections_;
  prometheus::Histogram* election_duration_;
  std::vector<prometheus::Counter*> sent_;
  std::vector<prometheus::Counter*> received_;
  prometheus::Family<prometheus::Gauge>* peer_up_;
  prometheus::Histogram* rtt_;
  prometheus::Family<prometheus::Gauge>* phi_;
  /// phi_'s series, one per peer in peers_ order (looked up once, not per input).
  std::vector<prometheus::Gauge*> phi_peer_;
  prometheus::Counter* leader_changes_;
  prometheus::Family<prometheus::Counter>* rejected_;
  prometheus::Counter* stale_rejected_;
  prometheus::Gauge* rtt_smoothed_;
  prometheus::Counter* rtt_warnings_;
  // What a suspicion saw, and how late this node's own timers and its
  // leader's heartbeats were (issue 11: false suspicions under load).
  election::duration heartbeat_interval_;
  prometheus::Family<prometheus::Histogram>* timer_lateness_;
  prometheus::Histogram* timer_lateness_leader_;
  prometheus::Histogram* timer_lateness_follower_;
  prometheus::Histogram* gap_sent_;
  prometheus::Histogram* gap_received_;
  prometheus::Counter* suspicions_;
  prometheus::Counter* suspicions_discounted_;
  prometheus::Counter* suspicions_refuted_;
  prometheus::Counter* promises_released_;
  prometheus::Histogram* suspicion_silence_;
  prometheus::Gauge* suspicion_threshold_;
  prometheus::Gauge* suspicion_lateness_;
  prometheus::Family<prometheus::Gauge>* replica_role_;
  prometheus::Gauge* commit_lsn_;
  prometheus::Gauge* applied_lsn_;
  prometheus::Gauge* durable_lsn_;
  prometheus::Family<prometheus::Gauge>* lag_records_;
  prometheus::Family<prometheus::Gauge>* lag_bytes_;
  prometheus::Family<prometheus::Gauge>* lag_seconds_;
  prometheus::Histogram* sync_duration_;
  prometheus::Counter* records_shipped_;
  prometheus::Counter* replica_lost_;
  prometheus::Gauge* checkpoint_lsn_;
  prometheus::Counter* checkpoints_;
  prometheus::Counter* snapshots_sent_;
  prometheus::Counter* snapshots_installed_;
  uint64_t checkpoints_seen_ = 0;
  uint64_t snapshots_sent_seen_ = 0;
  uint64_t snapshots_installed_seen_ = 0;
  prometheus::Histogram* commit_latency_;
  prometheus::Family<prometheus::Counter>* replica_dropped_;
  std::map<std::string, uint64_t> dropped_seen_;
  uint64_t syncs_seen_ = 0;
  uint64_t shipped_seen_ = 0;
  uint64_t lost_seen_ = 0;
  mutable std::mutex lag_mtx_;
  std::vector<replica_lag> lags_;

  std::shared_ptr<const node_log> log_;
  mutable std::mutex mtx_;
  std::optional<election::timestamp> election_started_;
  election::core_stats copied_; ///< the core's counters as last copied
  round_trip_watch rtt_watch_;
  uint64_t rtt_samples_seen_ = 0;
  bool heartbeat_pending_ = false;
  bool following_ = false; ///< a follower with a known leader
  election::node_id followed_;
  std::chrono::steady_clock::time_point last_heard_{};
  std::map<uint64_t, std::chrono::steady_clock::time_point> peer_heard_;
  /// Leader: when it last sent a heartbeat round (for the sender-side gap).
  std::optional<std::chrono::steady_clock::time_point> last_round_sent_;
  /// Late timers logged at most once a second; the others are counted.
  std::chrono::steady_clock::time_point last_late_log_{};
  uint64_t late_unlogged_ = 0;
};

/// Metrics of `probe` computed at scrape time (register beside its registry()):
/// conclave_leader_silence_seconds.
std::shared_ptr<prometheus::Collectable>
live_metrics(const std::shared_ptr<const node_probe>& probe);

} // namespace conclave::node
