#include "runtime/node/node_probe.hpp"

#include <caf/config.hpp>

#include <prometheus/client_metric.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <cstdio>

namespace conclave::node {

namespace el = conclave::election;

namespace {

/// Reasons of conclave_replica_dropped_messages_total (the core's drop
/// reasons, and messages of a type the host does not know).
constexpr const char* replica_drop_reasons[] = {
    "non_member", "stale_term", "lsn_gap", "unexpected", "no_match", "unknown_type"};

double seconds(el::duration d) {
  return std::chrono::duration<double>(d).count();
}

double millis(el::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

/// "12.3 ms"
std::string ms(el::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f ms", millis(d));
  return buf;
}

std::string caf_version() {
  return std::to_string(CAF_MAJOR_VERSION) + "." + std::to_string(CAF_MINOR_VERSION) + "."
         + std::to_string(CAF_PATCH_VERSION);
}

/// The metrics a scrape computes: they change between inputs.
class live_collectable final : public prometheus::Collectable {
public:
  explicit live_collectable(std::weak_ptr<const node_probe> probe)
      : probe_(std::move(probe)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    auto probe = probe_.lock();
    if (!probe)
      return {};
    prometheus::MetricFamily f;
    f.name = "conclave_leader_silence_seconds";
    f.help = "Follower: seconds since the last heartbeat of its leader (computed "
             "at scrape time); 0 on the leader and while no leader is known";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric m;
    m.gauge.value = probe->leader_silence_seconds();
    f.metric.push_back(m);
    return {f};
  }

private:
  std::weak_ptr<const node_probe> probe_;
};

} // namespace

node_probe::node_probe(const node_config& cfg, std::shared_ptr<status_writer> status,
                       steady_now_fn now)
    : registry_(std::make_shared<prometheus::Registry>()), status_(std::move(status)),
      now_(std::move(now)), self_(cfg.id.value),
      algorithm_(el::to_string(cfg.election.algo)),
      heartbeat_type_(
          static_cast<size_t>(std::find(el::message_type_names.begin(),
                                        el::message_type_names.end(), "heartbeat")
                              - el::message_type_names.begin())),
      heartbeat_interval_(cfg.election.heartbeat_interval), rtt_watch_(cfg.election) {
  using namespace prometheus;
  auto& reg = *registry_;
  for (auto& [id, addr] : cfg.peers)
    peers_.push_back(id);
  BuildGauge()
      .Name("conclave_build_info")
      .Help("Build of this conclave node (always 1)")
      .Register(reg)
      .Add({{"version", CONCLAVE_VERSION},
            {"caf_version", caf_version()},
            {"algorithm", algorithm_}})
      .Set(1);
  is_leader_ = &BuildGauge()
                    .Name("conclave_is_leader")
                    .Help("1 while this node believes it leads, else 0")
                    .Register(reg)
                    .Add({});
  acting_ = &BuildGauge()
                 .Name("conclave_acting")
                 .Help("1 while this node may act as leader (inside its lease)")
                 .Register(reg)
                 .Add({});
  term_ = &BuildGauge()
               .Name("conclave_term")
               .Help("Epoch of the term this node currently knows (the term is "
                     "epoch/leader: see conclave_term_leader)")
               .Register(reg)
               .Add({});
  term_leader_ = &BuildGauge()
                      .Name("conclave_term_leader")
                      .Help("Leader id of the term this node currently knows; terms "
                            "order by (conclave_term, conclave_term_leader)")
                      .Register(reg)
                      .Add({});
  elections_ = &BuildCounter()
                    .Name("conclave_elections_total")
                    .Help("Elections this node started, by algorithm and reason")
                    .Register(reg);
  election_duration_ =
      &BuildHistogram()
           .Name("conclave_election_duration_seconds")
           .Help("From the start of an election at this node to its adopting a leader")
           .Register(reg)
           .Add({}, Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                0.1, 0.2, 0.5, 1, 2, 5});
  auto& sent = BuildCounter()
                   .Name("conclave_messages_sent_total")
                   .Help("Election messages sent, by type")
                   .Register(reg);
  auto& received = BuildCounter()
                       .Name("conclave_messages_received_total")
                       .Help("Election messages received, by type")
                       .Register(reg);
  for (auto name : el::message_type_names) {
    sent_.push_back(&sent.Add({{"type", std::string{name}}}));
    received_.push_back(&received.Add({{"type", std::string{name}}}));
  }
  peer_up_ = &BuildGauge()
                  .Name("conclave_peer_up")
                  .Help("1 while the link to a peer is up (handshake done), else 0")
                  .Register(reg);
  for (auto p : peers_)
    peer_up_->Add({{"peer", std::to_string(p)}}).Set(0);
  rtt_ = &BuildHistogram()
              .Name("conclave_heartbeat_rtt_seconds")
              .Help("Leader: round-trip time of heartbeats to their acknowledgements")
              .Register(reg)
              .Add({}, Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                   0.005, 0.01, 0.025, 0.05, 0.1});
  phi_ = &BuildGauge()
              .Name("conclave_detector_phi")
              .Help("Follower: suspicion level of the leader (phi, or silence over "
                    "timeout for the fixed detector); 0 for other peers")
              .Register(reg);
  for (auto p : peers_) {
    phi_peer_.push_back(&phi_->Add({{"peer", std::to_string(p)}}));
    phi_peer_.back()->Set(0);
  }
  leader_changes_ = &BuildCounter()
                         .Name("conclave_leader_changes_total")
                         .Help("Times this node adopted a different leader")
                         .Register(reg)
                         .Add({});
  rejected_ = &BuildCounter()
                   .Name("conclave_rejected_messages_total")
                   .Help("Handshakes and messages dropped, by reason")
                   .Register(reg);
  for (auto r :
       {"wrong_cluster", "unknown_node", "same_id", "wrong_node", "protocol_mismatch",
        "unexpected_message", "missing_proof", "untrusted_certificate", "wrong_member_id",
        "bad_signature", "stale_nonce", "wrong_session"})
    rejected_->Add({{"reason", r}});
  stale_rejected_ = &rejected_->Add({{"reason", "stale_term"}});
  rtt_smoothed_ = &BuildGauge()
                       .Name("conclave_round_trip_seconds")
                       .Help("Smoothed round trip this node measured (leader: "
                             "heartbeat acks; Ring: hop acks); 0 before any")
                       .Register(reg)
                       .Add({});
  BuildGauge()
      .Name("conclave_round_trip_budget_seconds")
      .Help("Largest steady round trip the election settings tolerate (quorum "
            "guard: lease - shortest renewal interval; else detector timeout - "
            "heartbeat interval)")
      .Register(reg)
      .Add({})
      .Set(seconds(cfg.election.guard.enabled ? el::guard_round_trip_budget(cfg.election)
                                              : cfg.election.detector.timeout
                                                    - cfg.election.heartbeat_interval));
  rtt_warnings_ = &BuildCounter()
                       .Name("conclave_round_trip_warnings_total")
                       .Help("Times the measured round trip came near or beyond "
                             "what the election settings tolerate (one per "
                             "excursion, each logged once)")
                       .Register(reg)
                       .Add({});
  // 30 and 40 ms: with the fast profile (heartbeat 10 ms, detector floor 50
  // ms) a leader round more than 40 ms late is already a silence its
  // followers' detectors must flag (issue 11).
  auto lateness_buckets =
      Histogram::BucketBoundaries{0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                  0.03,   0.04,   0.05,  0.1,   0.2,   0.5,  1};
  timer_lateness_ = &BuildHistogram()
                         .Name("conclave_timer_lateness_seconds")
                         .Help("How late the candidate's timer fired after the "
                               "deadline it was armed for (clock thread, mailbox, "
                               "worker thread), by role: a leader's timer sends its "
                               "heartbeat round, a follower's judges its leader")
                         .Register(reg);
  timer_lateness_leader_ = &timer_lateness_->Add({{"role", "leader"}}, lateness_buckets);
  timer_lateness_follower_ =
      &timer_lateness_->Add({{"role", "follower"}}, lateness_buckets);
  auto& gaps = BuildHistogram()
                   .Name("conclave_heartbeat_gap_seconds")
                   .Help("Time between two heartbeat rounds: sent (as leader, "
                         "sender side) or received from the leader followed")
                   .Register(reg);
  gap_sent_ = &gaps.Add({{"direction", "sent"}}, lateness_buckets);
  gap_received_ = &gaps.Add({{"direction", "received"}}, lateness_buckets);
  suspicions_ = &BuildCounter()
                     .Name("conclave_suspicions_total")
                     .Help("Follower: times its failure detector suspected the leader")
                     .Register(reg)
                     .Add({});
  suspicions_discounted_ = &BuildCounter()
                                .Name("conclave_suspicions_discounted_total")
                                .Help("Follower: silences of the leader not counted "
                                      "against it because the judging timer fired "
                                      "late (this node was not running)")
                                .Register(reg)
                                .Add({});
  suspicions_refuted_ = &BuildCounter()
                             .Name("conclave_suspicions_refuted_total")
                             .Help("Follower: suspicions dropped before an election "
                                   "because the leader proved alive (heard again in "
                                   "its term, or a majority refused the pre-vote)")
                             .Register(reg)
                             .Add({});
  promises_released_ =
      &BuildCounter()
           .Name("conclave_promises_released_total")
           .Help("Quorum guard: promises to a leader's lease ended early because its "
                 "process was proven gone (its liveness connection closed by its host)")
           .Register(reg)
           .Add({});
  suspicion_silence_ =
      &BuildHistogram()
           .Name("conclave_suspicion_silence_seconds")
           .Help("Follower: the leader's silence when the detector judged it "
                 "(suspected or discounted)")
           .Register(reg)
           .Add({}, lateness_buckets);
  suspicion_threshold_ = &BuildGauge()
                              .Name("conclave_suspicion_threshold_seconds")
                              .Help("Follower: the detector's threshold (silence at "
                                    "which it suspects) at the last judgement")
                              .Register(reg)
                              .Add({});
  suspicion_lateness_ = &BuildGauge()
                             .Name("conclave_suspicion_timer_lateness_seconds")
                             .Help("Follower: how late the timer of the last "
                                   "judgement fired")
                             .Register(reg)
                             .Add({});
  replica_role_ = &BuildGauge()
                       .Name("conclave_replica_role")
                       .Help("1 for the role the node's replica has (secondary, "
                             "syncing, primary), 0 for the others; all 0 without "
                             "--data-dir")
                       .Register(reg);
  for (auto r : {"secondary", "syncing", "primary"})
    replica_role_->Add({{"role", r}}).Set(0);
  commit_lsn_ = &BuildGauge()
                     .Name("conclave_replica_commit_lsn")
                     .Help("Highest log record the replica knows committed")
                     .Register(reg)
                     .Add({});
  applied_lsn_ = &BuildGauge()
                      .Name("conclave_replica_applied_lsn")
                      .Help("Highest log record applied to the replica's readable state")
                      .Register(reg)
                      .Add({});
  durable_lsn_ = &BuildGauge()
                      .Name("conclave_replica_durable_lsn")
                      .Help("Highest log record the replica's log device made durable")
                      .Register(reg)
                      .Add({});
  lag_records_ = &BuildGauge()
                      .Name("conclave_replica_lag_records")
                      .Help("Primary: records of its log not yet durable on a "
                            "secondary; 0 on other nodes")
                      .Register(reg);
  lag_bytes_ = &BuildGauge()
                    .Name("conclave_replica_lag_bytes")
                    .Help("Primary: bytes of its log not yet durable on a secondary")
                    .Register(reg);
  lag_seconds_ = &BuildGauge()
                      .Name("conclave_replica_lag_seconds")
                      .Help("Primary: how long a secondary has been behind (0 when "
                            "it is not)")
                      .Register(reg);
  for (auto p : peers_)
    for (auto* f : {lag_records_, lag_bytes_, lag_seconds_})
      f->Add({{"peer", std::to_string(p)}}).Set(0);
  sync_duration_ =
      &BuildHistogram()
           .Name("conclave_replica_sync_duration_seconds")
           .Help("Sync phases of this node as new primary: from becoming primary "
                 "to serving")
           .Register(reg)
           .Add({}, Histogram::BucketBoundaries{0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                                0.1, 0.2, 0.5, 1, 2, 5});
  records_shipped_ = &BuildCounter()
                          .Name("conclave_replica_records_shipped_total")
                          .Help("Log records sent to secondaries (retransmissions "
                                "included)")
                          .Register(reg)
                          .Add({});
  replica_lost_ = &BuildCounter()
                       .Name("conclave_replica_messages_lost_total")
                       .Help("Replication messages to a member whose replica was not "
                             "reachable yet (dropped; the protocol resends)")
                       .Register(reg)
                       .Add({});
  checkpoint_lsn_ = &BuildGauge()
                         .Name("conclave_replica_checkpoint_lsn")
                         .Help("Last log record covered by the replica's newest "
                               "checkpoint (0: none)")
                         .Register(reg)
                         .Add({});
  checkpoints_ = &BuildCounter()
                      .Name("conclave_replica_checkpoints_total")
                      .Help("Checkpoints the replica wrote")
                      .Register(reg)
                      .Add({});
  snapshots_sent_ = &BuildCounter()
                         .Name("conclave_replica_snapshots_sent_total")
                         .Help("Checkpoints streamed to a replica whose next record "
                               "the log no longer held")
                         .Register(reg)
                         .Add({});
  snapshots_installed_ = &BuildCounter()
                              .Name("conclave_replica_snapshots_installed_total")
                              .Help("Checkpoints streamed from another replica and "
                                    "installed here")
                              .Register(reg)
                              .Add({});
  replica_dropped_ = &BuildCounter()
                          .Name("conclave_replica_dropped_messages_total")
                          .Help("Replication messages the replica dropped unapplied, "
                                "by reason")
                          .Register(reg);
  for (auto r : replica_drop_reasons)
    replica_dropped_->Add({{"reason", r}});
  commit_latency_ =
      &BuildHistogram()
           .Name("conclave_replica_commit_latency_seconds")
           .Help("Strong commits acknowledged by this node as primary: from the "
                 "request reaching the node to a majority having it durable")
           .Register(reg)
           .Add({}, Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1});
  // Every reason at 0 from the start: the first failover must show in increase().
  for (int r = 0; r <= static_cast<int>(el::election_reason::requested); ++r)
    elections(el::to_string(static_cast<el::election_reason>(r)));
  last_heard_ = now_();
}

std::shared_ptr<prometheus::Collectable>
live_metrics(const std::shared_ptr<const node_probe>& probe) {
  return std::make_shared<live_collectable>(probe);
}

prometheus::Counter& node_probe::elections(std::string_view reason) {
  return elections_->Add({{"algorithm", algorithm_}, {"reason", std::string{reason}}});
}

void node_probe::log_event(const el::election_event& e) const {
  using el::event_kind;
  if (!log_)
    return;
  switch (e.kind) {
  case event_kind::election_started:
    log_->info("election started (" + std::string{el::to_string(e.reason)}
               + "), last term " + el::to_string(e.t));
    break;
  case event_kind::became_leader:
    log_->info("became leader, term " + el::to_string(e.t));
    break;
  case event_kind::lost_leadership:
    log_->warn("lost leadership of term " + el::to_string(e.t) + " ("
               + std::string{el::to_string(e.why)} + ")");
    break;
  case event_kind::leader_changed:
    if (e.peer.value != self_) // a new leader logs "became leader" instead
      log_->info("following node " + el::to_string(e.peer) + ", term "
                 + el::to_string(e.t));
    break;
  case event_kind::acting_started:
    log_->info("acting as leader of term " + el::to_string(e.t));
    break;
  case event_kind::acting_stopped:
    log_->warn("stopped acting as leader of term " + el::to_string(e.t));
    break;
  case event_kind::peer_suspected:
    if (e.silence > el::duration{0})
      log_->warn("suspects node " + el::to_string(e.peer) + ": silent " + ms(e.silence)
                 + " (threshold " + ms(e.threshold) + "), timer " + ms(e.lateness)
                 + " late");
    else
      log_->warn("suspects node " + el::to_string(e.peer));
    break;
  case event_kind::suspicion_discounted:
    if (e.peer.value == self_)
      log_->info("as leader, waits for the acks of its quorum: none for " + ms(e.silence)
                 + " (limit " + ms(e.threshold) + "), but its own heartbeat round was "
                 + ms(e.lateness) + " late");
    else
      log_->info("does not suspect node " + el::to_string(e.peer) + ": silent "
                 + ms(e.silence) + " (threshold " + ms(e.threshold)
                 + ") but its own timer fired " + ms(e.lateness) + " late");
    break;
  case event_kind::suspicion_refuted:
    log_->info("dropped its suspicion of node " + el::to_string(e.peer)
               + ": it is alive");
    break;
  case event_kind::stale_claim_rejected:
    log_->warn("rejected a stale claim of node " + el::to_string(e.peer) + ", term "
               + el::to_string(e.t));
    break;
  default:
    break;
  }
}

void node_probe::event(const el::election_event& e, el::timestamp now) {
  using el::event_kind;
  log_event(e);
  switch (e.kind) {
  case event_kind::election_started: {
    elections(el::to_string(e.reason)).Increment();
    std::lock_guard<std::mutex> guard{mtx_};
    if (!election_started_)
      election_started_ = now;
    break;
  }
  case event_kind::became_leader:
  case event_kind::leader_changed: {
    std::lock_guard<std::mutex> guard{mtx_};
    if (election_started_) {
      election_duration_->Observe(seconds(now - *election_started_));
      election_started_.reset();
    }
    break;
  }
  case event_kind::heartbeat_rtt:
    rtt_->Observe(seconds(e.rtt));
    break;
  case event_kind::peer_suspected:
    if (e.silence > el::duration{0})
      record_suspicion(e);
    break;
  case event_kind::suspicion_discounted:
  case event_kind::suspicion_refuted:
    record_suspicion(e);
    break;
  default:
    break;
  }
}

void node_probe::record_suspicion(const el::election_event& e) {
  suspicion_view v;
  v.peer = e.peer.value;
  v.at_us = wall_clock_us();
  if (e.kind == el::event_kind::suspicion_refuted) {
    v.outcome = "refuted";
    if (auto last = status_->snapshot().last_suspicion; last && last->peer == v.peer) {
      v.silence_ms = last->silence_ms; // what the refuted suspicion saw
      v.threshold_ms = last->threshold_ms;
      v.timer_late_ms = last->timer_late_ms;
    }
  } else {
    v.outcome =
        e.kind == el::event_kind::suspicion_discounted ? "discounted" : "suspected";
    v.silence_ms = millis(e.silence);
    v.threshold_ms = millis(e.threshold);
    v.timer_late_ms = millis(e.lateness);
    suspicion_silence_->Observe(seconds(e.silence));
    suspicion_threshold_->Set(seconds(e.threshold));
    suspicion_lateness_->Set(seconds(e.lateness));
  }
  status_->set_last_suspicion(v);
}

void node_probe::timer_fired(el::duration lateness, bool leader) {
  (leader ? timer_lateness_leader_ : timer_lateness_follower_)
      ->Observe(seconds(std::max(lateness, el::duration{0})));
  if (lateness <= heartbeat_interval_ || !log_)
    return;
  auto now = now_();
  uint64_t unlogged = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (now - last_late_log_ < std::chrono::seconds(1)) {
      ++late_unlogged_;
      return;
    }
    last_late_log_ = now;
    unlogged = late_unlogged_;
    late_unlogged_ = 0;
  }
  log_->warn(std::string{"election timer fired "} + ms(lateness) + " late ("
             + (leader ? "leader" : "follower") + ")"
             + (unlogged > 0 ? "; " + std::to_string(unlogged)
                                   + " more late by over a heartbeat interval since "
                                     "the last such line"
                             : std::string{}));
}

void node_probe::message_received(size_t type) {
  if (type != heartbeat_type_)
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  heartbeat_pending_ = true; // state() follows once the core has handled it
}

void node_probe::message_rejected(std::string_view reason) {
  rejected_->Add({{"reason", std::string{reason}}}).Increment();
}

void node_probe::copy_core_stats(const el::core_stats& s) {
  // Counters only grow; a core's counters only grow too, so the difference is
  // what happened since the last copy.
  auto add = [](prometheus::Counter& c, uint64_t now, uint64_t before) {
    if (now > before)
      c.Increment(static_cast<double>(now - before));
  };
  for (size_t i = 0; i < el::message_type_count; ++i) {
    add(*sent_[i], s.sent[i], copied_.sent[i]);
    add(*received_[i], s.received[i], copied_.received[i]);
  }
  add(*leader_changes_, s.leader_changes, copied_.leader_changes);
  add(*stale_rejected_, s.stale_rejected, copied_.stale_rejected);
  add(*suspicions_, s.suspicions, copied_.suspicions);
  add(*suspicions_discounted_, s.suspicions_discounted, copied_.suspicions_discounted);
  add(*suspicions_refuted_, s.suspicions_refuted, copied_.suspicions_refuted);
  add(*promises_released_, s.promises_released, copied_.promises_released);
  copied_ = s;
}

void node_probe::state(const el::candidate_core& core, el::timestamp now) {
  is_leader_->Set(core.is_leader() ? 1 : 0);
  acting_->Set(core.acting() ? 1 : 0);
  auto t = core.current_term();
  term_->Set(static_cast<double>(t.epoch));
  term_leader_->Set(static_cast<double>(t.leader.value));
  auto leader = core.leader();
  double phi = core.is_leader() ? 0.0 : core.leader_phi(now);
  for (size_t i = 0; i < peers_.size(); ++i)
    phi_peer_[i]->Set(peers_[i] == leader.value ? phi : 0.0);
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto steady = now_();
    if (core.is_leader()
        && core.stats().sent[heartbeat_type_] > copied_.sent[heartbeat_type_]) {
      if (last_round_sent_)
        gap_sent_->Observe(
            std::chrono::duration<double>(steady - *last_round_sent_).count());
      last_round_sent_ = steady;
    } else if (!core.is_leader()) {
      last_round_sent_.reset();
    }
    copy_core_stats(core.stats());
    auto& rtt = core.round_trips();
    if (rtt.samples() != rtt_samples_seen_) {
      rtt_samples_seen_ = rtt.samples();
      rtt_smoothed_->Set(seconds(rtt.smoothed()));
      if (auto warning = rtt_watch_.observe(rtt.smoothed(), rtt.samples())) {
        rtt_warnings_->Increment();
        if (log_)
          log_->warn(*warning);
      }
    }
    bool following = !core.is_leader() && leader != el::no_node;
    if (following && following_ && leader == followed_ && heartbeat_pending_)
      gap_received_->Observe(std::chrono::duration<double>(steady - last_heard_).count());
    if (following && (!following_ || leader != followed_ || heartbeat_pending_))
      last_heard_ = steady; // a heartbeat, or a new leader: silence starts now
    following_ = following;
    followed_ = leader;
    heartbeat_pending_ = false;
  }
  std::map<uint64_t, std::string> states;
  auto steady = now_();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& p : core.participants(now)) {
      states[p.id.value] = std::string{el::to_string(p.state)};
      // The core's clock is not the probe's: keep the age, not the stamp.
      auto age = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          now - p.last_heard);
      peer_heard_[p.id.value] = steady - std::max(age, decltype(age)::zero());
    }
  }
  status_->update_leadership(leader.value, t.epoch, t.leader.value, core.is_leader(),
                             core.acting(), states);
}

double node_probe::leader_silence_seconds() const {
  std::lock_guard<std::mutex> guard{mtx_};
  if (!following_)
    return 0.0;
  return std::chrono::duration<double>(now_() - last_heard_).count();
}

std::map<uint64_t, double> node_probe::peer_silence_seconds() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::map<uint64_t, double> out;
  auto now = now_();
  for (auto& [id, at] : peer_heard_)
    out[id] = std::chrono::duration<double>(now - at).count();
  return out;
}

void node_probe::peer_link(uint64_t peer, bool up) {
  peer_up_->Add({{"peer", std::to_string(peer)}}).Set(up ? 1 : 0);
  status_->set_connected(peer, up);
}

std::vector<node_probe::replica_lag> node_probe::replica_lags() const {
  std::lock_guard<std::mutex> guard{lag_mtx_};
  return lags_;
}

void node_probe::replica(const replica_report& r) {
  {
    std::lock_guard<std::mutex> guard{lag_mtx_};
    lags_ = r.summary.role == "primary" ? r.lag : std::vector<replica_lag>{};
  }
  for (auto role : {"secondary", "syncing", "primary"})
    replica_role_->Add({{"role", role}}).Set(r.summary.role == role ? 1 : 0);
  commit_lsn_->Set(static_cast<double>(r.summary.commit_lsn));
  applied_lsn_->Set(static_cast<double>(r.summary.applied_lsn));
  durable_lsn_->Set(static_cast<double>(r.summary.durable_lsn));
  checkpoint_lsn_->Set(static_cast<double>(r.summary.checkpoint_lsn));
  for (auto p : peers_) {
    replica_lag l;
    for (auto& x : r.lag)
      if (x.peer == p)
        l = x;
    auto peer = std::to_string(p);
    lag_records_->Add({{"peer", peer}}).Set(static_cast<double>(l.records));
    lag_bytes_->Add({{"peer", peer}}).Set(static_cast<double>(l.bytes));
    lag_seconds_->Add({{"peer", peer}}).Set(l.seconds);
  }
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (r.syncs > syncs_seen_) {
      sync_duration_->Observe(r.last_sync_seconds);
      syncs_seen_ = r.syncs;
    }
    if (r.records_shipped > shipped_seen_) {
      records_shipped_->Increment(static_cast<double>(r.records_shipped - shipped_seen_));
      shipped_seen_ = r.records_shipped;
    }
    auto count = [](prometheus::Counter* c, uint64_t total, uint64_t& seen) {
      if (total > seen)
        c->Increment(static_cast<double>(total - seen));
      seen = std::max(seen, total);
    };
    count(checkpoints_, r.summary.checkpoints_written, checkpoints_seen_);
    count(snapshots_sent_, r.summary.snapshots_sent, snapshots_sent_seen_);
    count(snapshots_installed_, r.summary.snapshots_installed, snapshots_installed_seen_);
    if (r.messages_lost > lost_seen_) {
      replica_lost_->Increment(static_cast<double>(r.messages_lost - lost_seen_));
      lost_seen_ = r.messages_lost;
    }
    for (auto& [reason, total] : r.dropped) {
      auto& seen = dropped_seen_[reason];
      if (total <= seen)
        continue;
      replica_dropped_->Add({{"reason", reason}})
          .Increment(static_cast<double>(total - seen));
      // Stale terms, mismatched appends and late replies are routine around a
      // failover; the others mean a broken or foreign sender.
      if (log_ && reason != "stale_term" && reason != "no_match"
          && reason != "unexpected")
        log_->warn("replica dropped " + std::to_string(total - seen)
                   + " message(s): " + reason);
      seen = total;
    }
  }
  status_->update_replica(r.summary);
}

void node_probe::quorum_commit(double seconds) {
  commit_latency_->Observe(seconds);
}

} // namespace conclave::node
