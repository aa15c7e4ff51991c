#include "protocols/election/bully.hpp"

#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

using namespace std::chrono_literals;
using conclave::testing::election_network;
using conclave::testing::id;
namespace el = conclave::election;

namespace {

el::election_config bully_config() {
  el::election_config cfg;
  cfg.algo = el::algorithm::bully;
  return cfg;
}

/// Keeps in `named` the silent list of the latest heartbeat `leader` sent.
void watch_silent_lists(election_network& net, el::node_id leader,
                        std::vector<el::node_id>& named) {
  net.set_drop([&named, leader](el::node_id from, el::node_id, const el::message& m) {
    if (auto hb = std::get_if<el::heartbeat_msg>(&m); hb != nullptr && from == leader)
      named = hb->silent;
    return false;
  });
}

} // namespace

TEST(bully, highest_alive_id_wins_at_startup) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 2s));
  EXPECT_EQ(net.agreed_leader(), id(5));
  EXPECT_EQ(net.leaders(), std::vector<el::node_id>{id(5)});
}

TEST(bully, leader_crash_elects_next_highest_with_higher_term) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  auto old_term = net.node(5).current_term();
  net.crash(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  EXPECT_GT(net.node(4).current_term(), old_term);
  for (uint64_t i = 1; i <= 4; ++i)
    EXPECT_EQ(net.node(i).current_term(), net.node(4).current_term()) << "node " << i;
}

TEST(bully, silent_leader_is_detected_by_heartbeats) {
  election_network net(4, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  auto crashed_at = net.now();
  net.crash(id(4), /*notify=*/false); // like SIGSTOP: no connection drop
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  // Detection needs the detector timeout, not more than timeout + one election.
  auto cfg = bully_config();
  EXPECT_GE(net.now() - crashed_at, cfg.detector.timeout - cfg.heartbeat_interval);
  EXPECT_LE(net.now() - crashed_at, cfg.detector.timeout + cfg.answer_timeout + 10ms);
}

TEST(bully, concurrent_initiators_converge_on_one_leader) {
  election_network net(8, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(8); }, 2s));
  net.crash(id(8), /*notify=*/false);
  for (uint64_t i = 1; i <= 7; ++i)
    net.node(i).request_election(net.now());
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 2s));
  EXPECT_EQ(net.agreed_leader(), id(7));
  net.run_for(1s);
  EXPECT_EQ(net.leaders(), std::vector<el::node_id>{id(7)});
}

TEST(bully, rejoining_higher_id_does_not_preempt_by_default) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  net.crash(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  auto term = net.node(4).current_term();
  net.restart(id(5));
  net.run_for(2s);
  EXPECT_EQ(net.agreed_leader(), id(4));
  EXPECT_EQ(net.node(5).leader(), id(4));
  EXPECT_EQ(net.node(4).current_term(), term);
}

// A leader asked to hold an election (request_election, `elect@` in the
// simulator) while a higher member follows it: that member holds the
// election, since its leader is the one asking. It used to only answer, as to
// anyone whose leader is alive, and the leader's election timed out waiting
// for a coordinator and started again every ~220 ms, for ever.
TEST(bully, a_leader_asked_to_elect_gets_an_election_a_higher_follower_holds) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  net.crash(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  net.restart(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.node(5).leader() == id(4); }, 2s));
  auto term = net.node(4).current_term();
  net.node(4).request_election(net.now());
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  EXPECT_GT(net.node(5).current_term(), term);
  // Settled: nobody starts another election.
  uint64_t started = 0;
  for (uint64_t i = 1; i <= 5; ++i)
    started += net.node(i).stats().elections_started;
  net.run_for(2s);
  uint64_t after = 0;
  for (uint64_t i = 1; i <= 5; ++i)
    after += net.node(i).stats().elections_started;
  EXPECT_EQ(after, started);
  EXPECT_EQ(net.leaders(), std::vector<el::node_id>{id(5)});
}

TEST(bully, rejoining_higher_id_preempts_when_asked) {
  auto cfg = bully_config();
  cfg.preempt = true;
  election_network net(5, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  net.crash(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  auto term = net.node(4).current_term();
  net.restart(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  EXPECT_GT(net.node(5).current_term(), term);
}

TEST(bully, stale_coordinator_claim_is_rejected) {
  election_network net(3, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  auto t = net.node(1).current_term();
  el::term stale{t.epoch - 1, id(2)};
  net.node(1).handle(el::coordinator_msg{id(2), stale}, net.now());
  EXPECT_EQ(net.node(1).leader(), id(3));
  EXPECT_EQ(net.node(1).current_term(), t);
  EXPECT_EQ(net.node(1).stats().stale_rejected, 1u);
  bool reported = false;
  for (auto& e : net.node(1).events())
    reported |= e.kind == el::event_kind::stale_claim_rejected && e.peer == id(2);
  EXPECT_TRUE(reported);
}

TEST(bully, paused_leader_steps_down_on_higher_term_without_second_election) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  // Cut the leader off silently (SIGSTOP-like); the others elect 4.
  net.partition({{id(1), id(2), id(3), id(4)}, {id(5)}});
  ASSERT_TRUE(net.run_until(
      [&] { return net.node(1).leader() == id(4) && net.node(4).is_leader(); }, 2s));
  EXPECT_TRUE(net.node(5).is_leader()); // classic: it does not know yet
  uint64_t elections = 0;
  for (uint64_t i = 1; i <= 5; ++i)
    elections += net.node(i).stats().elections_started;
  net.heal();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 1s));
  EXPECT_FALSE(net.node(5).is_leader());
  uint64_t after = 0;
  for (uint64_t i = 1; i <= 5; ++i)
    after += net.node(i).stats().elections_started;
  EXPECT_EQ(after, elections);
}

TEST(bully, lost_coordinator_message_is_recovered_by_heartbeats) {
  election_network net(4, bully_config());
  net.set_drop([](el::node_id, el::node_id to, const el::message& m) {
    return to == el::node_id{2} && std::holds_alternative<el::coordinator_msg>(m);
  });
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  EXPECT_EQ(net.node(2).current_term(), net.node(4).current_term());
}

TEST(bully, lost_election_messages_still_end_with_one_leader) {
  election_network net(6, bully_config());
  int dropped = 0;
  net.set_drop([&](el::node_id, el::node_id, const el::message& m) {
    bool d = std::holds_alternative<el::election_msg>(m) && dropped < 5;
    dropped += d;
    return d;
  });
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 5s));
  net.run_for(2s);
  EXPECT_EQ(net.leaders().size(), 1u);
  EXPECT_NE(net.agreed_leader(), el::no_node);
}

TEST(bully, resign_hands_over_without_waiting_for_detection) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  auto start = net.now();
  ASSERT_TRUE(net.node(5).resign(net.now()));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(4); }, 2s));
  EXPECT_LT(net.now() - start, el::election_config{}.detector.timeout);
  EXPECT_FALSE(net.node(5).is_leader());
  EXPECT_EQ(net.node(5).leader(), id(4));
}

TEST(bully, resign_is_refused_by_a_follower) {
  election_network net(3, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  EXPECT_FALSE(net.node(1).resign(net.now()));
}

TEST(bully, terms_grow_across_successive_failures) {
  election_network net(6, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(6); }, 2s));
  el::term last = net.node(6).current_term();
  for (uint64_t dead = 6; dead >= 3; --dead) {
    net.crash(id(dead));
    ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(dead - 1); }, 2s));
    auto t = net.node(dead - 1).current_term();
    EXPECT_GT(t.epoch, last.epoch);
    last = t;
  }
}

TEST(bully, restarted_leader_never_reuses_a_term_of_its_earlier_life) {
  auto cfg = bully_config();
  election_network net(3, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  // Push the epoch up a few times so the old term is well above 1.
  for (int i = 0; i < 3; ++i) {
    net.node(3).request_election(net.now());
    net.run_for(100ms);
  }
  auto old_term = net.node(3).current_term();
  ASSERT_GT(old_term.epoch, 1u);
  // 3 crashes silently and comes back before anyone suspects it: it elects itself
  // knowing nothing, and learns its old term from the followers' acks.
  net.crash(id(3), /*notify=*/false);
  net.restart(id(3));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  net.run_for(200ms); // the fresh term reaches everyone with the next heartbeat
  EXPECT_GT(net.node(3).current_term(), old_term);
  EXPECT_EQ(net.node(1).current_term(), net.node(3).current_term());
  EXPECT_EQ(net.agreed_leader(), id(3));
}

// A stopped higher follower (silent, no connection drop) used to cost every
// failover the whole answer_timeout: the initiator asked it and waited. The
// leader names it silent in its heartbeats, so the initiator skips it.
TEST(bully, heartbeats_name_a_silent_follower_and_the_next_election_skips_it) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  std::vector<el::node_id> last_named;
  watch_silent_lists(net, id(5), last_named);
  net.run_for(200ms);
  EXPECT_TRUE(last_named.empty());    // nobody silent yet
  net.crash(id(4), /*notify=*/false); // like SIGSTOP of a follower
  auto cfg = bully_config();
  net.run_for(cfg.detector.timeout + 2 * cfg.heartbeat_interval);
  EXPECT_EQ(last_named, std::vector<el::node_id>{id(4)});
  auto crashed_at = net.now();
  net.crash(id(5)); // the leader's end is seen at once
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(3); }, 2s));
  EXPECT_LT(net.now() - crashed_at, cfg.answer_timeout)
      << "the initiator waited for the silent member's answer";
}

TEST(bully, a_member_named_silent_that_speaks_again_is_asked_again) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  net.crash(id(4), /*notify=*/false);
  auto cfg = bully_config();
  net.run_for(cfg.detector.timeout + 2 * cfg.heartbeat_interval);
  EXPECT_TRUE(net.node(3).reported_silent(id(4)));
  net.restart(id(4)); // back: it speaks to everyone
  net.run_for(cfg.detector.timeout + 2 * cfg.heartbeat_interval);
  EXPECT_FALSE(net.node(3).reported_silent(id(4)));
  net.crash(id(5));
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() != el::no_node; }, 2s));
  EXPECT_EQ(net.agreed_leader(), id(4)); // asked, answered, and won
}

// The list comes from the network: unsorted, repeated, naming the receiver
// itself or ids outside the group, it is still read right and harms nothing.
TEST(bully, a_malformed_silent_list_is_read_safely) {
  election_network net(5, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 2s));
  auto& c = net.node(3);
  el::heartbeat_msg hb{id(5), c.current_term(), 1000, {}};
  hb.silent = {id(4), id(99), id(3), id(4), id(1), el::node_id{0}};
  c.handle(hb, net.now());
  EXPECT_TRUE(c.reported_silent(id(4)));
  EXPECT_TRUE(c.reported_silent(id(1)));
  EXPECT_FALSE(c.reported_silent(id(2)));
  EXPECT_EQ(c.leader(), id(5));
  // Hearing from a named member directly lifts it, duplicates included.
  c.handle(el::heartbeat_ack_msg{id(4), c.current_term(), 1, false, 0}, net.now());
  EXPECT_FALSE(c.reported_silent(id(4)));
}

TEST(bully, a_heartbeat_names_at_most_the_64_highest_silent_members) {
  election_network net(70, bully_config());
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(70); }, 5s));
  std::vector<el::node_id> named;
  watch_silent_lists(net, id(70), named);
  for (uint64_t i = 1; i <= 68; ++i)
    net.crash(id(i), /*notify=*/false);
  net.run_for(400ms);
  ASSERT_EQ(named.size(), el::max_silent_named);
  EXPECT_EQ(named.front(), id(5));
  EXPECT_EQ(named.back(), id(68));
  EXPECT_TRUE(std::is_sorted(named.begin(), named.end()));
}
