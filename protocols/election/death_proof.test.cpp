// Proofs of death (candidate_core::peer_dead, guard.death_proof): a follower
// that learns that the incarnation whose lease it renewed is gone drops its
// promise, so a new leader acts without waiting out the dead leader's lease.
// Nothing else may end a promise early: a proof about another incarnation, a
// proof with the option off, a silence.
#include "protocols/election/candidate_core.hpp"
#include "protocols/election/core_factory.hpp"

#include "tests/support/election_network.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace std::chrono_literals;
using conclave::testing::acks_to;
using conclave::testing::election_network;
using conclave::testing::guarded;
using conclave::testing::id;
namespace el = conclave::election;

namespace {

el::election_config proving(el::algorithm a = el::algorithm::bully) {
  auto cfg = guarded(a);
  cfg.guard.death_proof = true;
  return cfg;
}

/// Follower 1 of {1, 2, 3} that renewed the lease of leader 3 (incarnation 7)
/// and then refused a heartbeat of leader 2 (incarnation 5) for that promise.
struct promised_follower {
  std::unique_ptr<el::candidate_core> c;
  el::term old_term{1, id(3), 7};
  el::term new_term{2, id(2), 5};
  el::timestamp now{0};

  explicit promised_follower(el::election_config cfg) {
    c = el::make_core(id(1), {id(1), id(2), id(3)}, cfg);
    c->start(now, 1);
    now += cfg.guard.lease_max + cfg.guard.max_clock_drift + 1ms; // start promise over
    c->tick(now);
    c->outbox().clear();
    c->handle(el::heartbeat_msg{id(3), old_term, 1}, now);
    auto first = acks_to(*c, id(3));
    EXPECT_EQ(first.size(), 1u);
    EXPECT_TRUE(!first.empty() && first[0].accepted);
    now += 5ms;
    c->handle(el::heartbeat_msg{id(2), new_term, 1}, now);
    auto refused = acks_to(*c, id(2));
    EXPECT_EQ(refused.size(), 1u);
    EXPECT_TRUE(!refused.empty() && !refused[0].accepted && refused[0].busy_for_ns > 0);
  }
};

} // namespace

TEST(death_proof, a_proof_about_the_promised_incarnation_grants_the_refused_round) {
  promised_follower f{proving()};
  f.now += 1ms;
  f.c->peer_dead(id(3), 7, f.now);
  auto acks = acks_to(*f.c, id(2));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_TRUE(acks[0].accepted);
  EXPECT_EQ(acks[0].seq, 1u);
  EXPECT_EQ(acks[0].t, f.new_term);
  EXPECT_EQ(f.c->stats().promises_released, 1u);
  // The promise now belongs to 2: 2's next round is granted, a third
  // claimant (3 restarted in a higher term) is refused.
  f.now += 1ms;
  f.c->handle(el::heartbeat_msg{id(2), f.new_term, 2}, f.now);
  auto next = acks_to(*f.c, id(2));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].accepted);
}

namespace {

/// Follower 1 of {1, 2, 3, 4, 5} following leader 5 (incarnation 7), pre-votes on.
std::unique_ptr<el::candidate_core> follower_of_five(el::algorithm a,
                                                     el::timestamp& now) {
  auto cfg = proving(a);
  cfg.pre_vote = true;
  auto c = el::make_core(id(1), {id(1), id(2), id(3), id(4), id(5)}, cfg);
  c->start(now, 1);
  now += cfg.guard.lease_max + cfg.guard.max_clock_drift + 1ms;
  c->tick(now);
  c->handle(el::heartbeat_msg{id(5), el::term{1, id(5), 7}, 1}, now);
  c->outbox().clear();
  EXPECT_EQ(c->leader(), id(5));
  EXPECT_TRUE(c->pre_vote_enabled());
  return c;
}

size_t pre_votes_sent(el::candidate_core& c) {
  size_t n = 0;
  for (auto& o : c.outbox())
    n += std::holds_alternative<el::pre_vote_msg>(o.msg);
  return n;
}

} // namespace

// A pre-vote guards against a suspicion. Peers that have not read their own
// proof yet still hear the leader and would refuse it, and the election would
// wait for them (a chaos run measured 40 ms). A proven death opens the
// election at once; a dropped link still asks first.
TEST(death_proof, a_proven_death_of_the_leader_elects_without_a_pre_vote) {
  for (auto a : {el::algorithm::bully, el::algorithm::ring}) {
    el::timestamp now{0};
    auto proven = follower_of_five(a, now);
    auto before = proven->stats();
    now += 1ms;
    proven->peer_dead(id(5), 7, now);
    EXPECT_EQ(proven->stats().pre_votes, before.pre_votes);
    EXPECT_EQ(proven->stats().elections_started, before.elections_started + 1);
    EXPECT_EQ(pre_votes_sent(*proven), 0u);

    el::timestamp then{0};
    auto dropped = follower_of_five(a, then);
    before = dropped->stats();
    then += 1ms;
    dropped->peer_down(id(5), then);
    EXPECT_EQ(dropped->stats().pre_votes, before.pre_votes + 1);
    EXPECT_EQ(dropped->stats().elections_started, before.elections_started);
    EXPECT_EQ(pre_votes_sent(*dropped), 3u);

    // A proof about an older life of the leader says nothing about this one.
    el::timestamp later{0};
    auto older = follower_of_five(a, later);
    before = older->stats();
    later += 1ms;
    older->peer_dead(id(5), 6, later);
    EXPECT_EQ(older->stats().elections_started, before.elections_started);
    EXPECT_EQ(older->leader(), id(5));
  }
}

TEST(death_proof, a_proof_about_another_incarnation_releases_nothing) {
  promised_follower f{proving()};
  f.now += 1ms;
  f.c->peer_dead(id(3), 6, f.now); // an older life of 3: the one leading lives on
  EXPECT_TRUE(acks_to(*f.c, id(2)).empty());
  EXPECT_EQ(f.c->stats().promises_released, 0u);
  f.now += 1ms;
  f.c->handle(el::heartbeat_msg{id(2), f.new_term, 2}, f.now);
  auto acks = acks_to(*f.c, id(2));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_FALSE(acks[0].accepted);
  EXPECT_GT(acks[0].busy_for_ns, 0u);
}

TEST(death_proof, without_the_option_a_proof_only_marks_the_peer_down) {
  promised_follower f{guarded(el::algorithm::bully)};
  f.now += 1ms;
  f.c->peer_dead(id(3), 7, f.now);
  EXPECT_TRUE(acks_to(*f.c, id(2)).empty());
  EXPECT_EQ(f.c->stats().promises_released, 0u);
  bool down = false;
  for (auto& p : f.c->participants(f.now))
    down |= p.id == id(3) && p.state == el::peer_state::down;
  EXPECT_TRUE(down);
  f.now += 1ms;
  f.c->handle(el::heartbeat_msg{id(2), f.new_term, 2}, f.now);
  auto acks = acks_to(*f.c, id(2));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_FALSE(acks[0].accepted);
}

TEST(death_proof, a_heartbeat_of_the_dead_incarnation_arriving_late_is_not_followed) {
  auto cfg = proving();
  auto c = el::make_core(id(1), {id(1), id(2), id(3)}, cfg);
  el::timestamp now{0};
  c->start(now, 1);
  now += cfg.guard.lease_max + cfg.guard.max_clock_drift + 1ms; // start promise over
  c->tick(now);
  el::term t{1, id(3), 7};
  c->handle(el::heartbeat_msg{id(3), t, 1}, now);
  ASSERT_EQ(c->leader(), id(3));
  now += 1ms;
  c->peer_dead(id(3), 7, now); // released, and 3 is down: an election opens
  EXPECT_EQ(c->stats().promises_released, 1u);
  EXPECT_EQ(c->leader(), el::no_node);
  c->outbox().clear();
  now += 1ms;
  c->handle(el::heartbeat_msg{id(3), t, 2}, now); // sent before it died
  EXPECT_EQ(c->leader(), el::no_node);
  auto acks = acks_to(*c, id(3));
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_FALSE(acks[0].accepted);
  // A new life of 3 (higher incarnation) is followed again.
  c->handle(el::heartbeat_msg{id(3), el::term{2, id(3), 8}, 1}, now);
  EXPECT_EQ(c->leader(), id(3));
}

// Found on processes: a follower that refused its leader's first heartbeat
// (its start-up promise) and followed it afterwards must not, when that
// leader dies, grant the old refused round to the dead leader: that renewed
// a promise to the dead incarnation and the next leader waited out a lease.
TEST(death_proof, an_old_refusal_of_the_dead_leader_is_not_granted_on_its_death) {
  auto cfg = proving();
  auto c = el::make_core(id(1), {id(1), id(2), id(3)}, cfg);
  el::timestamp now{0};
  c->start(now, 1); // promises an unknown lease until lease_max + drift
  el::term t3{1, id(3), 7};
  now += 5ms;
  c->handle(el::heartbeat_msg{id(3), t3, 1}, now);
  auto refused = acks_to(*c, id(3));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_FALSE(refused[0].accepted);
  now += cfg.guard.lease_max + cfg.guard.max_clock_drift;
  c->handle(el::heartbeat_msg{id(3), t3, 2}, now);
  auto granted = acks_to(*c, id(3));
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_TRUE(granted[0].accepted);
  now += 1ms;
  c->peer_dead(id(3), 7, now);
  EXPECT_TRUE(acks_to(*c, id(3)).empty()); // nothing granted to the dead
  EXPECT_EQ(c->stats().promises_released, 1u);
  now += 1ms;
  c->handle(el::heartbeat_msg{id(2), el::term{2, id(2), 5}, 1}, now);
  auto next = acks_to(*c, id(2));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0].accepted);
}

// Across the group: the leader crashes; its peers see the connection drop and
// get the proof. The new leader acts one round trip after its election instead
// of after the old lease.
class death_proof_both : public ::testing::TestWithParam<el::algorithm> {};

namespace {

/// Members acting now: alive, acting and inside their lease (a frozen leader's
/// core still says acting until it runs again; its lease has ended).
size_t acting_now(election_network& net) {
  size_t n = 0;
  for (auto i : net.ids())
    n += net.alive(i) && net.node(i).acting() && net.now() < net.node(i).lease_expiry();
  return n;
}

/// How long after the leader's crash the next leader acts, with or without
/// the proof delivered (to every peer, or to `only` of them).
el::duration failover(el::election_config cfg, bool prove,
                      std::vector<el::node_id> only = {}) {
  election_network net(5, cfg);
  net.start_all();
  EXPECT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.run_for(1s); // steady: the lease is renewed every round
  auto inc = net.node(5).incarnation();
  auto crashed_at = net.now();
  net.crash(id(5));
  if (prove)
    for (auto p :
         only.empty() ? std::vector<el::node_id>{id(1), id(2), id(3), id(4)} : only)
      net.prove_dead(p, id(5), inc);
  bool overlap = false;
  EXPECT_TRUE(net.run_until(
      [&] {
        overlap |= acting_now(net) > 1;
        return net.agreed_leader() == id(4);
      },
      3s));
  EXPECT_FALSE(overlap);
  return net.now() - crashed_at;
}

} // namespace

TEST_P(death_proof_both, a_proven_crash_fails_over_without_the_lease_wait) {
  auto cfg = proving(GetParam());
  auto with = failover(cfg, true);
  auto without = failover(cfg, false);
  // Pre-vote, election and one heartbeat round at 1 ms per hop.
  EXPECT_LT(with, 20ms);
  // Without the proof the promises to 5 (lease + drift after the last round
  // acked) must run out first.
  EXPECT_GE(without,
            cfg.guard.lease + cfg.guard.max_clock_drift - cfg.heartbeat_interval);
  EXPECT_GT(without, with + 30ms);
}

TEST_P(death_proof_both, a_proof_at_a_minority_does_not_shorten_the_wait) {
  auto cfg = proving(GetParam());
  // Only 4 (the next leader) and 3 know: 4 needs 3 grants of 5, and 1 and 2
  // keep their promises to 5.
  auto some = failover(cfg, true, {id(3), id(4)});
  EXPECT_GE(some, cfg.guard.lease + cfg.guard.max_clock_drift - cfg.heartbeat_interval);
}

TEST_P(death_proof_both, a_silent_leader_is_still_waited_out) {
  auto cfg = proving(GetParam());
  election_network net(5, cfg);
  net.start_all();
  ASSERT_TRUE(net.run_until([&] { return net.agreed_leader() == id(5); }, 3s));
  net.run_for(1s);
  net.pause(id(5), 400ms); // no proof: a stopped process is not a dead one
  bool overlap = false;
  ASSERT_TRUE(net.run_until(
      [&] {
        overlap |= acting_now(net) > 1;
        return net.node(4).acting();
      },
      3s));
  EXPECT_FALSE(overlap);
  for (int i = 1; i <= 4; ++i)
    EXPECT_EQ(net.node(i).stats().promises_released, 0u);
}

// Random partitions, pauses, crashes (each with its proof, delivered to the
// live peers at once) and restarts: never two candidates acting at once,
// checked after every event; one leader once every fault is healed.
TEST_P(death_proof_both, random_faults_with_proofs_never_let_two_act_at_once) {
  expect_one_acting_under_random_faults(
      proving(GetParam()), 5,
      [](election_network& net, std::mt19937_64& rng, uint32_t kind, el::node_id victim) {
        if (kind == 2) {
          if (net.alive(victim))
            net.pause(victim, std::chrono::milliseconds(10 + rng() % 300));
        } else if (net.alive(victim)) {
          auto inc = net.node(victim).incarnation();
          net.crash(victim);
          for (auto p : net.ids())
            if (p != victim && net.alive(p))
              net.prove_dead(p, victim, inc);
        } else {
          net.restart(victim);
        }
      },
      acting_now);
}

INSTANTIATE_TEST_SUITE_P(election, death_proof_both,
                         ::testing::Values(el::algorithm::bully, el::algorithm::ring),
                         [](const auto& info) {
                           return std::string{el::to_string(info.param)};
                         });
