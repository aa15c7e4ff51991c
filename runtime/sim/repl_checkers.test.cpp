// The replication checkers on made-up histories: each stays quiet on a good
// one and complains about the one property a bad one breaks.
#include "runtime/sim/repl_checkers.hpp"

#include <gtest/gtest.h>

using namespace conclave::sim;
using namespace std::chrono_literals;
namespace rp = conclave::replication;

namespace {

rp::term term_of(uint64_t epoch, uint64_t leader) {
  return rp::term{epoch, rp::node_id{leader}, 1};
}

repl_write strong_ack(uint64_t seq, size_t key, rp::timestamp acked, rp::term t,
                      uint64_t by = 1) {
  repl_write w;
  w.seq = seq;
  w.key = key;
  w.issued = acked - 1ms;
  w.acked = acked;
  w.acked_by = rp::node_id{by};
  w.acked_term = t;
  w.at = rp::lsn{seq + 1};
  return w;
}

repl_sample state(rp::timestamp at, uint64_t node, rp::term t, uint64_t applied,
                  std::vector<uint64_t> values, bool serving = false,
                  bool acting = false) {
  repl_sample s;
  s.at = at;
  s.node = rp::node_id{node};
  s.replica_role = serving ? rp::role::primary : rp::role::secondary;
  s.serving = serving;
  s.acting = acting;
  s.promised = t;
  s.applied = rp::lsn{applied};
  s.values = std::move(values);
  return s;
}

/// Two keys; node 1 leads term 1/1 and acknowledges writes 1 and 2; node 2
/// leads term 2/2 afterwards with both; every replica agrees.
repl_observation good_history() {
  repl_observation obs;
  obs.keys = 2;
  obs.heal = 100ms;
  obs.bound = 1s;
  obs.writes.push_back(strong_ack(1, 0, 10ms, term_of(1, 1)));
  obs.writes.push_back(strong_ack(2, 1, 20ms, term_of(1, 1)));
  obs.writes.push_back(strong_ack(3, 0, 150ms, term_of(2, 2), 2));
  obs.samples.push_back(state(15ms, 1, term_of(1, 1), 3, {1, 0}, true, true));
  obs.samples.push_back(state(15ms, 2, term_of(1, 1), 2, {0, 0}));
  obs.samples.push_back(state(30ms, 1, term_of(1, 1), 4, {1, 2}, true, true));
  obs.samples.push_back(state(120ms, 2, term_of(2, 2), 5, {1, 2}, true, true));
  obs.samples.push_back(state(160ms, 2, term_of(2, 2), 6, {3, 2}, true, true));
  obs.final_states.push_back(state(700ms, 1, term_of(2, 2), 6, {3, 2}));
  obs.final_states.push_back(state(700ms, 2, term_of(2, 2), 6, {3, 2}, true, true));
  return obs;
}

std::vector<repl_violation> check(const repl_observation& obs) {
  return run_repl_checkers(standard_repl_checkers(), obs);
}

std::vector<std::string> checkers_of(const std::vector<repl_violation>& vs) {
  std::vector<std::string> out;
  for (auto& v : vs)
    out.push_back(v.checker);
  return out;
}

} // namespace

TEST(repl_checkers, a_good_history_passes_every_checker) {
  EXPECT_TRUE(check(good_history()).empty());
}

TEST(repl_checkers, a_later_primary_without_an_acked_write_is_a_lost_commit) {
  auto obs = good_history();
  // Node 3 serves in term 3/3, after write 2 was acked in term 1/1, and lacks
  // it; it does not act (so only the durability checker applies).
  obs.samples.push_back(state(170ms, 3, term_of(3, 3), 7, {3, 0}, true, false));
  auto vs = check(obs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].checker, "acked_commits_survive");
  EXPECT_TRUE(vs[0].safety);
  EXPECT_EQ(vs[0].lost_seq, 2u);
}

TEST(repl_checkers, a_stale_primary_of_an_older_term_is_not_a_later_primary) {
  auto obs = good_history();
  // Node 1 still serves its old term 1/1 after write 3 was acked in 2/2: not
  // a later primary, and not acting: no complaint.
  obs.samples.push_back(state(170ms, 1, term_of(1, 1), 4, {1, 2}, true, false));
  EXPECT_TRUE(check(obs).empty());
}

TEST(repl_checkers, a_read_on_the_acting_primary_must_see_every_earlier_ack) {
  auto obs = good_history();
  // The same stale state, but its candidate claims to act: a stale read.
  obs.samples.push_back(state(170ms, 1, term_of(1, 1), 4, {1, 2}, true, true));
  auto vs = check(obs);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].checker, "acting_primary_reads");
  EXPECT_EQ(vs[0].lost_seq, 3u);
}

TEST(repl_checkers, weak_acks_may_be_lost) {
  auto obs = good_history();
  auto w = strong_ack(4, 1, 165ms, term_of(2, 2), 2);
  w.mode = rp::commit_mode::weak;
  obs.writes.push_back(w);
  EXPECT_TRUE(check(obs).empty());
}

TEST(repl_checkers, two_states_at_one_applied_lsn_must_be_equal) {
  auto obs = good_history();
  obs.samples.push_back(state(40ms, 3, term_of(1, 1), 4, {1, 9}));
  auto vs = check(obs);
  ASSERT_EQ(checkers_of(vs), std::vector<std::string>{"committed_prefix_agrees"});
  EXPECT_TRUE(vs[0].safety);
}

TEST(repl_checkers, no_strong_commit_after_heal_is_a_liveness_failure) {
  auto obs = good_history();
  obs.writes.pop_back(); // write 3 was the only one after heal
  obs.samples.erase(obs.samples.begin() + 4);
  obs.final_states[0].values = {1, 2};
  obs.final_states[1].values = {1, 2};
  auto vs = check(obs);
  ASSERT_EQ(checkers_of(vs), std::vector<std::string>{"commit_within_bound"});
  EXPECT_FALSE(vs[0].safety);
  obs.judge_liveness = false;
  EXPECT_TRUE(check(obs).empty());
}

// Found by an attack with --weak-share 1: a run without strong writes always
// failed the liveness check.
TEST(repl_checkers, a_run_of_weak_writes_is_judged_on_its_weak_acknowledgements) {
  auto obs = good_history();
  for (auto& w : obs.writes)
    w.mode = rp::commit_mode::weak;
  EXPECT_TRUE(check(obs).empty());
  obs.bound = 10ms; // write 3 was acked 50 ms after heal
  EXPECT_EQ(checkers_of(check(obs)), std::vector<std::string>{"commit_within_bound"});
}

TEST(repl_checkers, a_weak_ack_does_not_stand_in_when_strong_writes_were_sent) {
  auto obs = good_history();
  obs.writes.back().mode = rp::commit_mode::weak; // the only ack after heal
  EXPECT_EQ(checkers_of(check(obs)), std::vector<std::string>{"commit_within_bound"});
}

TEST(repl_checkers, a_commit_after_the_bound_does_not_count) {
  auto obs = good_history();
  obs.bound = 10ms; // write 3 was acked 50 ms after heal
  EXPECT_EQ(checkers_of(check(obs)), std::vector<std::string>{"commit_within_bound"});
}

TEST(repl_checkers, replicas_that_end_apart_do_not_converge) {
  auto obs = good_history();
  obs.final_states[0] = state(700ms, 1, term_of(2, 2), 5, {1, 2});
  auto vs = check(obs);
  ASSERT_EQ(checkers_of(vs), std::vector<std::string>{"replicas_converge"});
  EXPECT_FALSE(vs[0].safety);
}

TEST(repl_checkers, more_in_flight_than_window_and_batch_breaks_flow_control) {
  auto obs = good_history();
  obs.window_bytes = 600;
  obs.batch_bytes = 200;
  obs.samples[0].peak_inflight = 800; // exactly the bound: allowed
  EXPECT_TRUE(check(obs).empty());
  // A record larger than the batch ships alone: the bound grows with it.
  obs.samples[1].largest_record = 300;
  obs.samples[1].peak_inflight = 900;
  EXPECT_TRUE(check(obs).empty());
  obs.samples[2].peak_inflight = 801;
  obs.samples[3].peak_inflight = 900;
  obs.final_states[1].peak_inflight = 900;
  auto vs = check(obs);
  // One complaint per replica, at the first sample that shows it.
  ASSERT_EQ(checkers_of(vs),
            (std::vector<std::string>{"flow_control_holds", "flow_control_holds"}));
  EXPECT_TRUE(vs[0].safety);
  EXPECT_NE(vs[0].what.find("801 bytes"), std::string::npos) << vs[0].what;
  EXPECT_NE(vs[1].what.find("replica 2"), std::string::npos) << vs[1].what;
  // Without a window, nothing is judged.
  obs.window_bytes = 0;
  EXPECT_TRUE(check(obs).empty());
}
