#include "runtime/node/node_probe.hpp"

#include "protocols/election/core_factory.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace conclave::node;
namespace el = conclave::election;
using namespace std::chrono_literals;

namespace {

node_config config_of(uint64_t id) {
  node_options o;
  o.id = id;
  o.listen = "127.0.0.1:7001";
  o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";
  o.listen = "127.0.0.1:700" + std::to_string(id);
  return make_node_config(o).value();
}

/// The value of the sample of `family` whose labels include `label`=`value`.
std::optional<double> value_of(prometheus::Registry& reg, const std::string& family,
                               const std::string& label = {},
                               const std::string& value = {}) {
  for (auto& f : reg.Collect()) {
    if (f.name != family)
      continue;
    for (auto& m : f.metric) {
      bool match = label.empty();
      for (auto& l : m.label)
        match = match || (l.name == label && l.value == value);
      if (match)
        return f.type == prometheus::MetricType::Counter ? m.counter.value
                                                         : m.gauge.value;
    }
  }
  return std::nullopt;
}

struct fake_clock {
  std::chrono::steady_clock::time_point now{std::chrono::seconds(1000)};
  steady_now_fn fn() {
    return [this] { return now; };
  }
};

} // namespace

TEST(node_probe, every_election_reason_exists_at_zero_before_the_first_election) {
  auto cfg = config_of(2);
  node_probe probe{cfg, std::make_shared<status_writer>("", node_status{})};
  for (auto reason :
       {"startup", "no_leader", "leader_down", "leader_suspected", "leader_resigned",
        "election_received", "election_timeout", "preempt", "leader_dead", "requested"})
    EXPECT_EQ(value_of(*probe.registry(), "conclave_elections_total", "reason", reason),
              0.0)
        << reason;
  EXPECT_EQ(value_of(*probe.registry(), "conclave_rejected_messages_total", "reason",
                     "stale_term"),
            0.0);
}

TEST(node_probe, a_new_leader_does_not_log_that_it_follows_itself) {
  auto cfg = config_of(3);
  node_probe probe{cfg, std::make_shared<status_writer>("", node_status{})};
  std::ostringstream out;
  probe.set_log(std::make_shared<node_log>(3, log_format::text, &out));
  el::term t{4, el::node_id{3}, 1};
  probe.event({el::event_kind::leader_changed, t, el::node_id{3}}, el::timestamp{0});
  probe.event({el::event_kind::became_leader, t}, el::timestamp{0});
  probe.event(
      {el::event_kind::leader_changed, el::term{5, el::node_id{2}, 1}, el::node_id{2}},
      el::timestamp{0});
  auto log = out.str();
  EXPECT_EQ(log.find("following node 3"), std::string::npos) << log;
  EXPECT_NE(log.find("became leader, term 4/3"), std::string::npos) << log;
  EXPECT_NE(log.find("following node 2, term 5/2"), std::string::npos) << log;
}

TEST(node_probe, counts_come_from_the_core_and_the_whole_term_is_exported) {
  auto cfg = config_of(1);
  node_probe probe{cfg, std::make_shared<status_writer>("", node_status{})};
  auto core =
      el::make_core(el::node_id{1}, {el::node_id{2}, el::node_id{3}}, cfg.election);
  core->start(el::timestamp{0}, 1);
  core->handle(
      el::message{el::heartbeat_msg{el::node_id{3}, el::term{2, el::node_id{3}, 1}, 1}},
      el::timestamp{1ms});
  probe.state(*core, el::timestamp{1ms});
  probe.state(*core, el::timestamp{2ms}); // copying twice must not count twice
  auto& reg = *probe.registry();
  EXPECT_EQ(value_of(reg, "conclave_messages_received_total", "type", "heartbeat"), 1.0);
  EXPECT_EQ(value_of(reg, "conclave_messages_sent_total", "type", "heartbeat_ack"),
            static_cast<double>(
                core->stats().sent[el::message{el::heartbeat_ack_msg{}}.index()]));
  EXPECT_EQ(value_of(reg, "conclave_leader_changes_total"),
            static_cast<double>(core->stats().leader_changes));
  EXPECT_EQ(value_of(reg, "conclave_term"), 2.0);
  EXPECT_EQ(value_of(reg, "conclave_term_leader"), 3.0);
}

TEST(node_probe, leader_silence_grows_between_heartbeats_and_restarts_at_each) {
  auto cfg = config_of(1);
  fake_clock clock;
  auto probe = std::make_shared<node_probe>(
      cfg, std::make_shared<status_writer>("", node_status{}), clock.fn());
  auto core =
      el::make_core(el::node_id{1}, {el::node_id{2}, el::node_id{3}}, cfg.election);
  core->start(el::timestamp{0}, 1);
  EXPECT_EQ(probe->leader_silence_seconds(), 0.0); // no leader yet
  auto heartbeat = [&](uint64_t seq, el::timestamp at) {
    probe->message_received(el::message{el::heartbeat_msg{}}.index());
    core->handle(el::message{el::heartbeat_msg{el::node_id{3},
                                               el::term{2, el::node_id{3}, 1}, seq}},
                 at);
    probe->state(*core, at);
  };
  heartbeat(1, el::timestamp{1ms});
  clock.now += 120ms;
  EXPECT_NEAR(probe->leader_silence_seconds(), 0.120, 1e-9);
  // Another input that is not a heartbeat does not reset the silence.
  probe->state(*core, el::timestamp{100ms});
  clock.now += 30ms;
  EXPECT_NEAR(probe->leader_silence_seconds(), 0.150, 1e-9);
  heartbeat(2, el::timestamp{151ms});
  EXPECT_EQ(probe->leader_silence_seconds(), 0.0);
  // And the scrape sees it through the live collectable.
  clock.now += 40ms;
  auto families = live_metrics(probe)->Collect();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "conclave_leader_silence_seconds");
  EXPECT_NEAR(families[0].metric.at(0).gauge.value, 0.040, 1e-9);
}

// Issue 12: a node warns when measured round trips approach the envelope.
TEST(node_probe, a_round_trip_near_the_envelope_is_logged_once_and_counted) {
  node_options o;
  o.id = 3;
  o.listen = "127.0.0.1:7003";
  o.peers = "1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003";
  o.detector = "fixed";
  o.heartbeat_ms = 50;
  o.detector_timeout_ms = 150; // guard on: lease 100 ms, budget 90 ms
  auto cfg = make_node_config(o).value();
  // The fixed lease (the default adapts up to 500 ms: budget 490 ms).
  EXPECT_NEAR(el::guard_round_trip_budget(cfg.election).count() / 1e9, 0.490, 1e-9);
  cfg.election.guard.lease_max = cfg.election.guard.lease;
  node_probe probe{cfg, std::make_shared<status_writer>("", node_status{})};
  std::ostringstream out;
  probe.set_log(std::make_shared<node_log>(3, log_format::text, &out));
  auto& reg = *probe.registry();
  EXPECT_EQ(value_of(reg, "conclave_round_trip_warnings_total"), 0.0);
  EXPECT_EQ(value_of(reg, "conclave_round_trip_seconds"), 0.0);
  EXPECT_NEAR(*value_of(reg, "conclave_round_trip_budget_seconds"), 0.090, 1e-9);
  auto core =
      el::make_core(el::node_id{3}, {el::node_id{1}, el::node_id{2}}, cfg.election);
  core->start(el::timestamp{0}, 1);
  core->request_election(el::timestamp{0}); // the highest id wins at once
  ASSERT_TRUE(core->is_leader());
  auto t = core->current_term();
  core->outbox().clear();
  auto ack = [&](uint64_t from, uint64_t seq, el::timestamp at) {
    core->handle(el::message{el::heartbeat_ack_msg{el::node_id{from}, t, seq, true}}, at);
    probe.state(*core, at);
  };
  probe.state(*core, el::timestamp{1ms}); // nothing measured yet
  EXPECT_EQ(value_of(reg, "conclave_round_trip_warnings_total"), 0.0);
  ack(1, 1, el::timestamp{80ms}); // 80 ms: above 3/4 of the 90 ms budget
  EXPECT_NEAR(*value_of(reg, "conclave_round_trip_seconds"), 0.080, 1e-9);
  EXPECT_EQ(value_of(reg, "conclave_round_trip_warnings_total"), 1.0);
  auto log = out.str();
  EXPECT_NE(log.find("round trip 80ms"), std::string::npos) << log;
  EXPECT_NE(log.find("quorum guard"), std::string::npos) << log;
  core->tick(el::timestamp{100ms}); // round 2
  ack(2, 2, el::timestamp{185ms});
  // Still out of the envelope: no second line.
  probe.state(*core, el::timestamp{191ms});
  EXPECT_EQ(value_of(reg, "conclave_round_trip_warnings_total"), 1.0);
  EXPECT_EQ(out.str().find("round trip", log.find("round trip") + 1), std::string::npos);
}

TEST(node_probe, replica_reports_set_role_lsns_lag_and_count_shipped_records_once) {
  auto cfg = config_of(1);
  auto status = std::make_shared<status_writer>("", node_status{});
  node_probe probe{cfg, status};
  auto& reg = *probe.registry();
  EXPECT_EQ(value_of(reg, "conclave_replica_role", "role", "primary"), 0.0);
  node_probe::replica_report r;
  r.summary.role = "primary";
  r.summary.commit_lsn = 7;
  r.summary.applied_lsn = 7;
  r.summary.durable_lsn = 8;
  r.lag.push_back({3, 2, 100, 0.5});
  r.syncs = 1;
  r.last_sync_seconds = 0.004;
  r.records_shipped = 10;
  probe.replica(r);
  probe.replica(r); // the same report again: totals do not grow
  EXPECT_EQ(value_of(reg, "conclave_replica_role", "role", "primary"), 1.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_role", "role", "secondary"), 0.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_commit_lsn"), 7.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_applied_lsn"), 7.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_lag_records", "peer", "3"), 2.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_lag_bytes", "peer", "3"), 100.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_lag_seconds", "peer", "2"), 0.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_records_shipped_total"), 10.0);
  r.records_shipped = 15;
  r.lag.clear(); // caught up (or stepped down): lag back to 0
  probe.replica(r);
  EXPECT_EQ(value_of(reg, "conclave_replica_records_shipped_total"), 15.0);
  EXPECT_EQ(value_of(reg, "conclave_replica_lag_records", "peer", "3"), 0.0);
  auto sync_count = [&] {
    for (auto& f : reg.Collect())
      if (f.name == "conclave_replica_sync_duration_seconds")
        return f.metric.at(0).histogram.sample_count;
    return uint64_t{99};
  };
  EXPECT_EQ(sync_count(), 1u);
  EXPECT_EQ(
      value_of(reg, "conclave_replica_dropped_messages_total", "reason", "non_member"),
      0.0);
  r.dropped["non_member"] = 3;
  probe.replica(r);
  probe.replica(r);
  EXPECT_EQ(
      value_of(reg, "conclave_replica_dropped_messages_total", "reason", "non_member"),
      3.0);
  ASSERT_TRUE(status->snapshot().replica);
  EXPECT_EQ(status->snapshot().replica->commit_lsn, 7u);
}

// Issue 11: what a suspicion saw, and how late the node's own timers fired,
// must be visible in the metrics, the log and status.json.
TEST(node_probe, a_suspicion_reports_silence_threshold_and_timer_lateness) {
  auto cfg = config_of(1);
  auto status = std::make_shared<status_writer>("", node_status{});
  node_probe probe{cfg, status};
  std::ostringstream out;
  probe.set_log(std::make_shared<node_log>(1, log_format::text, &out));
  el::election_event e{el::event_kind::peer_suspected, el::term{4, el::node_id{3}, 1},
                       el::node_id{3}};
  e.silence = 62ms;
  e.threshold = 50ms;
  e.lateness = 12ms;
  probe.event(e, el::timestamp{0});
  auto& reg = *probe.registry();
  EXPECT_DOUBLE_EQ(*value_of(reg, "conclave_suspicion_threshold_seconds"), 0.05);
  EXPECT_DOUBLE_EQ(*value_of(reg, "conclave_suspicion_timer_lateness_seconds"), 0.012);
  auto last = status->snapshot().last_suspicion;
  ASSERT_TRUE(last);
  EXPECT_EQ(last->outcome, "suspected");
  EXPECT_EQ(last->peer, 3u);
  EXPECT_DOUBLE_EQ(last->silence_ms, 62.0);
  EXPECT_NE(out.str().find("silent 62.0 ms (threshold 50.0 ms), timer 12.0 ms late"),
            std::string::npos)
      << out.str();
  // A discount, and then a refutation keeping what the suspicion saw.
  e.kind = el::event_kind::suspicion_discounted;
  probe.event(e, el::timestamp{0});
  EXPECT_EQ(status->snapshot().last_suspicion->outcome, "discounted");
  probe.event({el::event_kind::suspicion_refuted, e.t, el::node_id{3}}, el::timestamp{0});
  EXPECT_EQ(status->snapshot().last_suspicion->outcome, "refuted");
  EXPECT_DOUBLE_EQ(status->snapshot().last_suspicion->threshold_ms, 50.0);
  EXPECT_NE(to_json(status->snapshot()).find("\"last_suspicion\""), std::string::npos);
  // Timer lateness goes to the histogram of the role; late ones are logged.
  probe.timer_fired(3ms, true);
  probe.timer_fired(70ms, false);
  for (auto& f : reg.Collect()) {
    if (f.name != "conclave_timer_lateness_seconds")
      continue;
    for (auto& m : f.metric) {
      EXPECT_EQ(m.histogram.sample_count, 1u);
    }
  }
  EXPECT_NE(out.str().find("election timer fired 70.0 ms late (follower)"),
            std::string::npos)
      << out.str();
}

TEST(node_probe, suspicion_counters_follow_the_cores_counts) {
  auto cfg = config_of(1);
  node_probe probe{cfg, std::make_shared<status_writer>("", node_status{})};
  auto core =
      el::make_core(el::node_id{1}, {el::node_id{2}, el::node_id{3}}, cfg.election);
  core->start(el::timestamp{0}, 1);
  core->handle(el::heartbeat_msg{el::node_id{3}, {4, el::node_id{3}, 1}, 1},
               el::timestamp{1ms});
  auto due = *core->next_deadline();
  core->tick(due + 100ms);            // late: discounted
  core->tick(*core->next_deadline()); // on time: suspected
  probe.state(*core, due + 200ms);
  auto& reg = *probe.registry();
  EXPECT_EQ(value_of(reg, "conclave_suspicions_discounted_total"), 1.0);
  EXPECT_EQ(value_of(reg, "conclave_suspicions_total"), 1.0);
  EXPECT_EQ(value_of(reg, "conclave_suspicions_refuted_total"), 0.0);
}
