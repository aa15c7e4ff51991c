// Plain-call tests of replica_core, one rule each. A small in-memory group
// delivers messages in order (a filter can drop them) and plays the hosts: it
// executes effects in order, and reports records durable when a test says so
// (or at once, for hosts marked auto_sync).
#include "protocols/replication/replica_core.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>

using namespace conclave::replication;
using namespace std::chrono_literals;

namespace {

term term_of_epoch(uint64_t epoch, uint64_t leader) {
  return term{epoch, node_id{leader}, 1};
}

entry rec(uint64_t at, const term& t, std::string payload = "x") {
  return entry{lsn{at}, t, entry_kind::transaction, std::move(payload)};
}

struct host {
  std::unique_ptr<replica_core> core;
  bool auto_sync = true;
  lsn applied;
  std::vector<commit_acked> acked;
  std::vector<txn_failed> failed;
  std::vector<send_snapshot> snapshots;
  std::vector<sync_finished> syncs;
  term persisted;
};

class group {
public:
  using filter = std::function<bool(node_id from, node_id to, const message&)>;

  explicit group(size_t n, replica_config cfg = {}) : cfg_(cfg) {
    for (uint64_t i = 1; i <= n; ++i)
      ids_.push_back(node_id{i});
    hosts_.resize(n);
    for (auto id : ids_)
      restart(id, {});
  }

  void restart(node_id id, recovered_state st) {
    auto& h = at(id);
    h = host{};
    h.core = std::make_unique<replica_core>(id, ids_, cfg_, std::move(st));
    h.applied = h.core->commit_lsn();
  }

  host& at(node_id id) { return hosts_[id.value - 1]; }
  replica_core& core(uint64_t id) { return *at(node_id{id}).core; }
  timestamp now() const { return now_; }
  void advance(duration d) { now_ += d; }

  /// Executes effects and queues messages of every core.
  void drain() {
    for (auto id : ids_)
      drain(id);
  }

  void drain(node_id id) {
    auto& h = at(id);
    auto effects = std::move(h.core->effects());
    h.core->effects().clear();
    for (auto& e : effects) {
      if (auto* p = std::get_if<persist_term>(&e))
        h.persisted = p->t;
      else if (auto* a = std::get_if<apply_through>(&e))
        h.applied = a->through;
      else if (auto* c = std::get_if<commit_acked>(&e))
        h.acked.push_back(*c);
      else if (auto* f = std::get_if<txn_failed>(&e))
        h.failed.push_back(*f);
      else if (auto* s = std::get_if<send_snapshot>(&e))
        h.snapshots.push_back(*s);
      else if (auto* s = std::get_if<sync_finished>(&e))
        h.syncs.push_back(*s);
    }
    if (h.auto_sync && h.core->durable_lsn() < h.core->log().last()) {
      h.core->log_durable(h.core->log().last(), now_);
      drain(id);
      return;
    }
    auto out = std::move(h.core->outbox());
    h.core->outbox().clear();
    for (auto& o : out)
      net_.push_back({id, o.to, std::move(o.msg)});
  }

  /// Delivers queued messages (and what they cause) until none is left.
  void run(size_t limit = 100000) {
    drain();
    while (!net_.empty() && limit-- > 0) {
      auto m = std::move(net_.front());
      net_.pop_front();
      if (drop_ && drop_(m.from, m.to, m.msg))
        continue;
      at(m.to).core->handle(m.msg, now_);
      drain(m.to);
    }
  }

  /// Drops every message for which `f` holds (until reset).
  void set_filter(filter f) { drop_ = std::move(f); }
  size_t queued() const { return net_.size(); }

  /// Makes node `id` primary of (epoch, id) and runs the sync phase.
  void elect(uint64_t id, uint64_t epoch) {
    ASSERT_TRUE(core(id).become_primary(term_of_epoch(epoch, id), now_));
    run();
  }

  /// Proposes `n` strong transactions on `id` and ships them.
  void propose(uint64_t id, int n, commit_mode mode = commit_mode::strong) {
    for (int i = 0; i < n; ++i) {
      auto r =
          core(id).propose(txn_ref{++txns_}, "v" + std::to_string(txns_), mode, now_);
      ASSERT_TRUE(std::holds_alternative<lsn>(r)) << to_string(std::get<errc>(r));
    }
    core(id).flush(now_);
    run();
  }

  void sync(uint64_t id) {
    core(id).log_durable(core(id).log().last(), now_);
    run();
  }

  void tick_all() {
    for (auto id : ids_)
      hosts_[id.value - 1].core->tick(now_);
    run();
  }

private:
  struct in_flight {
    node_id from;
    node_id to;
    message msg;
  };
  replica_config cfg_;
  std::vector<node_id> ids_;
  std::vector<host> hosts_;
  std::deque<in_flight> net_;
  filter drop_;
  timestamp now_{0};
  uint64_t txns_ = 0;
};

recovered_state log_of(std::vector<entry> es, uint64_t promised_epoch = 0,
                       uint64_t promised_leader = 0) {
  recovered_state st;
  st.entries = std::move(es);
  if (promised_epoch > 0)
    st.promised = term_of_epoch(promised_epoch, promised_leader);
  return st;
}

bool same_log(replica_core& a, replica_core& b) {
  if (a.log().last() != b.log().last())
    return false;
  for (auto at = lsn{std::max(a.log().base(), b.log().base()).value + 1};
       at <= a.log().last(); at.value++)
    if (a.log().at(at).t != b.log().at(at).t
        || a.log().at(at).payload != b.log().at(at).payload)
      return false;
  return true;
}

// -- sync phase -------------------------------------------------------------------

TEST(replica_core, new_primary_fetches_what_it_lacks_from_the_most_advanced_replica) {
  group g{3};
  auto a = term_of_epoch(1, 2);
  g.restart(node_id{1}, log_of({rec(1, a), rec(2, a), rec(3, a)}, 1, 2));
  g.restart(node_id{2},
            log_of({rec(1, a), rec(2, a), rec(3, a), rec(4, a), rec(5, a)}, 1, 2));
  g.restart(node_id{3}, log_of({rec(1, a), rec(2, a)}, 1, 2));
  g.elect(1, 2);
  auto& p = g.core(1);
  EXPECT_EQ(p.current_role(), role::primary);
  EXPECT_TRUE(p.serving());
  ASSERT_EQ(p.log().last(), lsn{6});
  EXPECT_EQ(p.log().at(lsn{5}).t, a);
  EXPECT_EQ(p.log().at(lsn{6}).kind, entry_kind::new_primary);
  EXPECT_EQ(p.log().at(lsn{6}).t, term_of_epoch(2, 1));
  EXPECT_EQ(p.commit_lsn(), lsn{6});
  ASSERT_EQ(g.at(node_id{1}).syncs.size(), 1u);
  EXPECT_EQ(g.at(node_id{1}).syncs[0].chosen, lsn{5});
  EXPECT_TRUE(same_log(p, g.core(2)));
  EXPECT_TRUE(same_log(p, g.core(3)));
}

TEST(replica_core, secondaries_drop_a_suffix_beyond_the_chosen_log) {
  group g{3};
  auto a = term_of_epoch(1, 1);
  auto b = term_of_epoch(2, 3); // a primary that never reached a majority
  g.restart(node_id{1}, log_of({rec(1, a), rec(2, a)}, 1, 1));
  g.restart(node_id{2}, log_of({rec(1, a), rec(2, a)}, 1, 1));
  g.restart(node_id{3}, log_of({rec(1, a), rec(2, a), rec(3, b), rec(4, b)}, 2, 3));
  // Node 3 misses the sync phase: the majority {1, 2} chooses the log through 2.
  g.set_filter([](node_id from, node_id to, const message& m) {
    return (to == node_id{3} || from == node_id{3}) && !std::holds_alternative<append>(m)
           && !std::holds_alternative<append_reply>(m);
  });
  g.elect(1, 3);
  EXPECT_TRUE(g.core(1).serving());
  EXPECT_EQ(g.core(1).log().last(), lsn{3});
  EXPECT_TRUE(same_log(g.core(1), g.core(3)));
  EXPECT_EQ(g.core(3).log().at(lsn{3}).kind, entry_kind::new_primary);
  EXPECT_EQ(g.core(3).stats().records_truncated, 2u);
}

TEST(replica_core, primary_serves_only_once_its_new_primary_record_is_committed) {
  group g{3};
  g.set_filter([](node_id, node_id to, const message& m) {
    return to != node_id{1} && std::holds_alternative<append>(m);
  });
  g.elect(1, 1);
  EXPECT_EQ(g.core(1).current_role(), role::primary);
  EXPECT_FALSE(g.core(1).serving());
  auto r = g.core(1).propose(txn_ref{1}, "v", commit_mode::strong, g.now());
  ASSERT_TRUE(std::holds_alternative<errc>(r));
  EXPECT_EQ(std::get<errc>(r), errc::syncing);
  g.set_filter({});
  g.advance(100ms);
  g.tick_all();
  EXPECT_TRUE(g.core(1).serving());
  auto r2 = g.core(2).propose(txn_ref{2}, "v", commit_mode::strong, g.now());
  EXPECT_EQ(std::get<errc>(r2), errc::not_primary);
}

TEST(replica_core, sync_waits_for_a_majority_of_replies) {
  group g{5};
  g.set_filter([](node_id, node_id to, const message& m) {
    return std::holds_alternative<sync_request>(m) && to.value >= 3;
  });
  g.elect(1, 1);
  EXPECT_EQ(g.core(1).current_role(), role::syncing);
  EXPECT_EQ(g.core(1).log().last(), lsn{0});
  g.set_filter({});
  g.advance(60ms);
  g.tick_all();
  EXPECT_TRUE(g.core(1).serving());
}

TEST(replica_core, sync_reply_reports_the_durable_log_only) {
  auto a = term_of_epoch(1, 1);
  replica_core c{node_id{2},
                 {node_id{1}, node_id{2}, node_id{3}},
                 {},
                 log_of({rec(1, a), rec(2, a)}, 1, 1)};
  auto t = term_of_epoch(1, 1);
  c.handle(append{node_id{1}, t, lsn{2}, a, {rec(3, a), rec(4, a)}, lsn{0}},
           timestamp{0});
  EXPECT_EQ(c.log().last(), lsn{4});
  c.outbox().clear();
  c.handle(sync_request{node_id{3}, term_of_epoch(2, 3)}, timestamp{0});
  ASSERT_EQ(c.outbox().size(), 1u);
  auto& r = std::get<sync_reply>(c.outbox()[0].msg);
  EXPECT_EQ(r.last, lsn{2}); // records 3 and 4 are not durable yet
  EXPECT_EQ(r.t, term_of_epoch(2, 3));
  bool persisted = false;
  for (auto& e : c.effects())
    persisted = persisted || std::holds_alternative<persist_term>(e);
  EXPECT_TRUE(persisted);
}

TEST(replica_core, sync_fetches_up_to_a_window_per_round_trip_not_one_batch) {
  // Found by the simulation's storm mix: with small batches the sync phase took
  // one round trip per batch, and failover hundreds of milliseconds.
  replica_config cfg;
  cfg.max_batch_bytes = 100;
  group g{3, cfg};
  auto a = term_of_epoch(1, 2);
  std::vector<entry> es;
  for (uint64_t i = 1; i <= 50; ++i)
    es.push_back(rec(i, a, std::string(50, 'v')));
  g.restart(node_id{2}, log_of(es, 1, 2));
  g.elect(1, 2);
  EXPECT_TRUE(g.core(1).serving());
  EXPECT_EQ(g.core(1).log().last(), lsn{51});
  EXPECT_EQ(g.core(1).stats().sent[2], 1u); // one fetch_request
}

TEST(replica_core, silent_fetch_source_is_replaced_by_collecting_the_replies_again) {
  group g{3};
  auto a = term_of_epoch(1, 2);
  g.restart(node_id{2}, log_of({rec(1, a), rec(2, a), rec(3, a)}, 1, 2));
  g.restart(node_id{3}, log_of({rec(1, a), rec(2, a)}, 1, 2));
  g.set_filter([](node_id from, node_id, const message& m) {
    return from == node_id{2} && std::holds_alternative<fetch_reply>(m);
  });
  g.elect(1, 2);
  EXPECT_EQ(g.core(1).current_role(), role::syncing);
  // Node 2 answered the sync request, then its fetch replies are lost; after
  // three retries node 1 collects again. Node 2 is now cut off entirely.
  g.set_filter([](node_id from, node_id to, const message&) {
    return from == node_id{2} || to == node_id{2};
  });
  for (int i = 0; i < 4; ++i) {
    g.advance(50ms);
    g.tick_all();
  }
  // {1, 3} is a majority: it chooses node 3's log, through 2 (record 3 was on
  // node 2 alone, so it was never committed).
  EXPECT_TRUE(g.core(1).serving());
  EXPECT_EQ(g.core(1).log().last(), lsn{3});
  EXPECT_EQ(g.core(1).log().at(lsn{3}).kind, entry_kind::new_primary);
}

TEST(replica_core, duplicated_and_reordered_appends_change_nothing) {
  auto t = term_of_epoch(1, 1);
  replica_core c{node_id{2}, {node_id{1}, node_id{2}, node_id{3}}};
  append first{node_id{1}, t, lsn{0}, {}, {rec(1, t), rec(2, t)}, lsn{0}};
  append second{node_id{1}, t, lsn{2}, t, {rec(3, t)}, lsn{2}};
  c.handle(first, timestamp{0});
  c.handle(second, timestamp{0});
  c.handle(first, timestamp{0}); // late duplicate
  c.handle(second, timestamp{0});
  EXPECT_EQ(c.log().last(), lsn{3});
  EXPECT_EQ(c.stats().records_truncated, 0u);
  EXPECT_EQ(c.commit_lsn(), lsn{2});
  size_t appends = 0;
  for (auto& e : c.effects())
    appends += std::holds_alternative<append_records>(e) ? 1 : 0;
  EXPECT_EQ(appends, 2u);
}

/// The append_reply messages in a core's outbox (taken out).
std::vector<append_reply> take_replies(replica_core& c) {
  std::vector<append_reply> out;
  for (auto& o : c.outbox())
    if (auto* r = std::get_if<append_reply>(&o.msg))
      out.push_back(*r);
  c.outbox().clear();
  return out;
}

TEST(replica_core, secondary_answers_appended_records_once_they_are_durable) {
  auto t = term_of_epoch(1, 1);
  replica_core c{node_id{2}, {node_id{1}, node_id{2}, node_id{3}}};
  c.handle(append{node_id{1}, t, lsn{0}, {}, {rec(1, t), rec(2, t)}, lsn{0}},
           timestamp{0});
  // Not durable yet: no answer (it would not let the primary commit).
  EXPECT_TRUE(take_replies(c).empty());
  c.log_durable(lsn{2}, timestamp{0});
  auto replies = take_replies(c);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(replies[0].ok);
  EXPECT_EQ(replies[0].matched, lsn{2});
  EXPECT_EQ(replies[0].durable, lsn{2});
  // A retransmission of records held (its answer was lost) and a heartbeat
  // are answered at once.
  c.handle(append{node_id{1}, t, lsn{0}, {}, {rec(1, t), rec(2, t)}, lsn{0}},
           timestamp{0});
  replies = take_replies(c);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].durable, lsn{2});
  c.handle(append{node_id{1}, t, lsn{2}, t, {}, lsn{2}}, timestamp{0});
  EXPECT_EQ(take_replies(c).size(), 1u);
}

TEST(replica_core, secondary_never_truncates_a_committed_record) {
  auto t = term_of_epoch(1, 1);
  replica_core c{node_id{2}, {node_id{1}, node_id{2}, node_id{3}}};
  c.handle(append{node_id{1}, t, lsn{0}, {}, {rec(1, t), rec(2, t)}, lsn{2}},
           timestamp{0});
  EXPECT_EQ(c.commit_lsn(), lsn{2});
  // A (misbehaving) primary of a later term claims another record at lsn 2.
  auto u = term_of_epoch(2, 3);
  c.handle(append{node_id{3}, u, lsn{1}, t, {rec(2, u)}, lsn{0}}, timestamp{0});
  EXPECT_EQ(c.log().at(lsn{2}).t, t);
  EXPECT_EQ(c.stats().dropped_for(drop_reason::unexpected), 1u);
}

// -- commit -------------------------------------------------------------------------

TEST(replica_core, strong_commit_is_acknowledged_once_a_majority_has_it_durable) {
  group g{3};
  g.elect(1, 1);
  for (uint64_t i = 1; i <= 3; ++i)
    g.at(node_id{i}).auto_sync = false;
  g.propose(1, 1);
  EXPECT_TRUE(g.at(node_id{1}).acked.empty());
  g.sync(1); // durable on the primary alone
  EXPECT_TRUE(g.at(node_id{1}).acked.empty());
  g.sync(3);
  ASSERT_EQ(g.at(node_id{1}).acked.size(), 1u);
  EXPECT_EQ(g.at(node_id{1}).acked[0].at, lsn{2});
  EXPECT_EQ(g.core(1).commit_lsn(), lsn{2});
}

TEST(replica_core, the_majority_must_include_the_primary) {
  group g{3};
  g.elect(1, 1);
  g.at(node_id{1}).auto_sync = false;
  g.propose(1, 1);
  // Nodes 2 and 3 have it durable: a majority, but without the primary.
  EXPECT_EQ(g.core(2).durable_lsn(), lsn{2});
  EXPECT_EQ(g.core(3).durable_lsn(), lsn{2});
  EXPECT_TRUE(g.at(node_id{1}).acked.empty());
  g.sync(1);
  EXPECT_EQ(g.at(node_id{1}).acked.size(), 1u);
}

TEST(replica_core,
     snapshot_acknowledged_after_a_newer_checkpoint_is_followed_by_the_newer_one) {
  // Found by the simulation (seed 331 before the fix): the primary waited for an
  // acknowledgement at its new checkpoint lsn, and resent only after a timeout.
  group g{3};
  g.elect(1, 1);
  g.set_filter([](node_id, node_id to, const message&) { return to == node_id{3}; });
  g.propose(1, 10);
  g.core(1).checkpointed(lsn{5});
  g.set_filter({});
  g.advance(100ms);
  g.tick_all();
  ASSERT_EQ(g.at(node_id{1}).snapshots.size(), 1u);
  EXPECT_EQ(g.at(node_id{1}).snapshots[0].at, lsn{5});
  g.core(1).checkpointed(lsn{9}); // while the stream at 5 is on its way
  EXPECT_TRUE(g.core(3).snapshot_offered(node_id{1}, g.core(1).promised(), lsn{5},
                                         g.core(1).log().base_term(), g.now()));
  g.run();
  ASSERT_EQ(g.at(node_id{1}).snapshots.size(), 2u);
  EXPECT_EQ(g.at(node_id{1}).snapshots[1].at, lsn{9});
}

TEST(replica_core, weak_commit_is_acknowledged_when_the_primary_has_it_durable) {
  group g{3};
  g.elect(1, 1);
  g.set_filter([](node_id, node_id to, const message&) { return to != node_id{1}; });
  g.propose(1, 1, commit_mode::weak);
  ASSERT_EQ(g.at(node_id{1}).acked.size(), 1u);
  EXPECT_EQ(g.at(node_id{1}).acked[0].mode, commit_mode::weak);
  EXPECT_EQ(g.core(1).commit_lsn(), lsn{1}); // not committed by the quorum
}

TEST(replica_core, records_are_shipped_pipelined_before_any_acknowledgement) {
  group g{3};
  g.elect(1, 1);
  g.core(1).propose(txn_ref{1}, "a", commit_mode::strong, g.now());
  g.core(1).flush(g.now());
  g.core(1).propose(txn_ref{2}, "b", commit_mode::strong, g.now());
  g.core(1).flush(g.now());
  g.drain(node_id{1});
  EXPECT_EQ(g.queued(), 4u); // two appends to each secondary, no reply yet
  g.run();
  EXPECT_EQ(g.at(node_id{1}).acked.size(), 2u);
}

TEST(replica_core, proposals_between_flushes_go_out_as_one_batch) {
  group g{3};
  g.elect(1, 1);
  auto before = g.core(1).stats().sent[4];
  for (uint64_t i = 1; i <= 10; ++i)
    g.core(1).propose(txn_ref{i}, "v", commit_mode::strong, g.now());
  g.core(1).flush(g.now());
  g.run();
  EXPECT_EQ(g.core(1).stats().sent[4] - before, 2u);
  EXPECT_EQ(g.at(node_id{1}).acked.size(), 10u);
}

// -- secondaries apply committed records only ------------------------------------

TEST(replica_core, secondary_applies_only_records_known_committed) {
  group g{3};
  g.elect(1, 1);
  g.at(node_id{1}).auto_sync = false;
  g.at(node_id{3}).auto_sync = false;
  g.propose(1, 2);
  // Node 2 holds lsn 2..3 durably, but only it does: not committed.
  EXPECT_EQ(g.core(2).durable_lsn(), lsn{3});
  EXPECT_EQ(g.at(node_id{2}).applied, lsn{1});
  g.sync(1); // now 1 and 2: committed; node 2 learns it with the next append
  EXPECT_EQ(g.core(1).commit_lsn(), lsn{3});
  EXPECT_EQ(g.at(node_id{2}).applied, lsn{1});
  g.advance(30ms);
  g.tick_all(); // heartbeat carries the commit lsn
  EXPECT_EQ(g.at(node_id{2}).applied, lsn{3});
  EXPECT_EQ(g.core(2).known_primary_commit(), lsn{3});
  // Node 3 has the records but not durable: it applies them (committed), and
  // reports durability separately.
  EXPECT_EQ(g.at(node_id{3}).applied, lsn{3});
}

// -- bad input ------------------------------------------------------------------------

TEST(replica_core,
     lower_term_is_dropped_counted_and_answered_so_the_old_primary_steps_down) {
  group g{3};
  g.elect(1, 1);
  g.core(1).propose(txn_ref{7}, "v", commit_mode::strong, g.now());
  // Node 2 is elected in a higher term while node 1's record is in flight.
  g.set_filter([](node_id from, node_id to, const message&) {
    return from == node_id{1} || to == node_id{1};
  });
  g.elect(2, 2);
  EXPECT_TRUE(g.core(2).serving());
  g.set_filter({});
  g.core(1).flush(g.now());
  g.run();
  EXPECT_GE(g.core(2).stats().dropped_for(drop_reason::stale_term), 1u);
  EXPECT_EQ(g.core(1).current_role(), role::secondary);
  ASSERT_EQ(g.at(node_id{1}).failed.size(), 1u);
  EXPECT_EQ(g.at(node_id{1}).failed[0].txn, txn_ref{7});
  EXPECT_EQ(g.at(node_id{1}).failed[0].reason, errc::primary_changed);
  EXPECT_EQ(g.at(node_id{1}).failed[0].primary_hint, node_id{2});
  EXPECT_EQ(g.core(3).log().last(), lsn{2}); // never took the stale record
}

TEST(replica_core, promised_term_survives_a_restart) {
  group g{3};
  g.elect(2, 5);
  auto promised = g.at(node_id{3}).persisted;
  EXPECT_EQ(promised, term_of_epoch(5, 2));
  recovered_state st;
  st.promised = promised;
  g.restart(node_id{3}, st);
  append stale{node_id{1}, term_of_epoch(4, 1),           lsn{0},
               {},         {rec(1, term_of_epoch(4, 1))}, lsn{0}};
  g.core(3).handle(stale, g.now());
  EXPECT_EQ(g.core(3).stats().dropped_for(drop_reason::stale_term), 1u);
  EXPECT_EQ(g.core(3).log().last(), lsn{0});
}

TEST(replica_core, message_from_a_non_member_is_dropped_and_counted) {
  group g{3};
  append a{node_id{9}, term_of_epoch(1, 9),           lsn{0},
           {},         {rec(1, term_of_epoch(1, 9))}, lsn{1}};
  g.core(2).handle(a, g.now());
  EXPECT_EQ(g.core(2).stats().dropped_for(drop_reason::non_member), 1u);
  EXPECT_EQ(g.core(2).log().last(), lsn{0});
  EXPECT_EQ(g.core(2).promised(), term{});
}

TEST(replica_core, append_with_a_gap_in_lsns_is_dropped_and_never_applied) {
  group g{3};
  auto t = term_of_epoch(1, 1);
  append a{node_id{1}, t, lsn{0}, {}, {rec(1, t), rec(3, t)}, lsn{3}};
  g.core(2).handle(a, g.now());
  EXPECT_EQ(g.core(2).stats().dropped_for(drop_reason::lsn_gap), 1u);
  EXPECT_EQ(g.core(2).log().last(), lsn{0});
  EXPECT_EQ(g.core(2).commit_lsn(), lsn{0});
  append b{node_id{1}, t, lsn{0}, {}, {rec(1, term_of_epoch(2, 1))}, lsn{1}};
  g.core(2).handle(b, g.now()); // a record from a later term than the message's
  EXPECT_EQ(g.core(2).stats().dropped_for(drop_reason::lsn_gap), 2u);
  EXPECT_EQ(g.core(2).log().last(), lsn{0});
}

TEST(replica_core, append_from_a_node_that_is_not_the_terms_leader_is_dropped) {
  group g{3};
  auto t = term_of_epoch(1, 1);
  append a{node_id{3}, t, lsn{0}, {}, {rec(1, t)}, lsn{1}};
  g.core(2).handle(a, g.now());
  EXPECT_EQ(g.core(2).stats().dropped_for(drop_reason::unexpected), 1u);
  EXPECT_EQ(g.core(2).log().last(), lsn{0});
}

// -- catch-up
// ----------------------------------------------------------------------------

TEST(replica_core, lagging_replica_catches_up_from_the_primary_log) {
  group g{3};
  g.elect(1, 1);
  g.set_filter([](node_id, node_id to, const message&) { return to == node_id{3}; });
  g.propose(1, 20);
  EXPECT_EQ(g.at(node_id{1}).acked.size(), 20u); // 1 and 2 suffice
  EXPECT_EQ(g.core(3).log().last(), lsn{1});
  auto lag = g.core(1).lag();
  ASSERT_EQ(lag.size(), 2u);
  EXPECT_EQ(lag[1].peer, node_id{3});
  EXPECT_EQ(lag[1].records, 20u); // it has the new_primary record only
  EXPECT_GT(lag[1].bytes, 20u * 24);
  EXPECT_EQ(lag[0].records, 0u);
  g.set_filter({});
  g.advance(100ms);
  g.tick_all();
  EXPECT_TRUE(same_log(g.core(1), g.core(3)));
  EXPECT_EQ(g.core(1).lag()[1].records, 0u);
}

TEST(replica_core, replica_behind_the_checkpoint_gets_a_snapshot_then_the_log_after_it) {
  group g{3};
  g.elect(1, 1);
  g.set_filter([](node_id, node_id to, const message&) { return to == node_id{3}; });
  g.propose(1, 10);
  g.core(1).checkpointed(lsn{8});
  EXPECT_EQ(g.core(1).log().base(), lsn{8});
  g.propose(1, 2);
  g.set_filter({});
  g.advance(100ms);
  g.tick_all();
  ASSERT_EQ(g.at(node_id{1}).snapshots.size(), 1u);
  auto s = g.at(node_id{1}).snapshots[0];
  EXPECT_EQ(s.to, node_id{3});
  EXPECT_EQ(s.at, lsn{8});
  // Node 3's host streams the checkpoint in; its core takes it.
  EXPECT_TRUE(g.core(3).snapshot_offered(node_id{1}, g.core(1).promised(), s.at,
                                         s.at_term, g.now()));
  g.run();
  EXPECT_EQ(g.core(3).log().base(), lsn{8});
  EXPECT_EQ(g.core(3).log().last(), g.core(1).log().last());
  EXPECT_TRUE(same_log(g.core(1), g.core(3)));
}

TEST(replica_core,
     snapshot_that_the_log_already_holds_keeps_the_durable_records_after_it) {
  // Found by the simulation (seed 4576 before the fix): a replica that took a
  // checkpoint stream by replacing its log dropped durable records after it
  // that had counted towards a commit.
  auto a = term_of_epoch(1, 1);
  std::vector<entry> es;
  for (uint64_t i = 1; i <= 10; ++i)
    es.push_back(rec(i, a));
  replica_core c{node_id{2}, {node_id{1}, node_id{2}, node_id{3}}, {}, log_of(es, 1, 1)};
  auto b = term_of_epoch(2, 1);
  EXPECT_FALSE(c.snapshot_offered(node_id{1}, b, lsn{5}, a, timestamp{0}));
  EXPECT_EQ(c.log().last(), lsn{10});
  EXPECT_EQ(c.durable_lsn(), lsn{10});
  EXPECT_EQ(c.commit_lsn(), lsn{5});
  bool applied = false;
  for (auto& e : c.effects())
    if (auto* ap = std::get_if<apply_through>(&e))
      applied = ap->through == lsn{5};
  EXPECT_TRUE(applied);
  // A checkpoint whose record at its lsn differs from ours replaces the log.
  auto other = term_of_epoch(1, 3);
  EXPECT_TRUE(c.snapshot_offered(node_id{1}, b, lsn{7}, other, timestamp{0}));
  EXPECT_EQ(c.log().base(), lsn{7});
  EXPECT_EQ(c.log().last(), lsn{7});
  EXPECT_EQ(c.commit_lsn(), lsn{7});
}

TEST(replica_core, slow_secondary_stalls_no_commit_and_costs_at_most_its_window) {
  replica_config cfg;
  cfg.max_inflight_bytes = 2000;
  cfg.max_batch_bytes = 500;
  group g{3, cfg};
  g.elect(1, 1);
  // Node 3 receives but its answers are lost: it looks slow to the primary.
  g.set_filter([](node_id from, node_id, const message&) { return from == node_id{3}; });
  for (int round = 0; round < 20; ++round) {
    g.propose(1, 10);
    auto lag = g.core(1).lag();
    EXPECT_LE(lag[1].inflight_bytes, cfg.max_inflight_bytes + cfg.max_batch_bytes);
  }
  EXPECT_EQ(g.at(node_id{1}).acked.size(), 200u);
  EXPECT_EQ(g.core(1).lag()[1].records, 200u);
  // The peak the host reports (and the simulator judges) saw the window fill.
  auto peak = g.core(1).stats().peak_inflight_bytes;
  EXPECT_GE(peak, cfg.max_inflight_bytes);
  EXPECT_LE(peak, cfg.max_inflight_bytes + cfg.max_batch_bytes);
  auto largest = g.core(1).stats().largest_record_bytes;
  EXPECT_GT(largest, 0u);
  EXPECT_LE(largest, cfg.max_batch_bytes);
}

TEST(replica_core, ignoring_the_window_shows_in_the_peak_in_flight) {
  // The broken fixture of the simulator's flow-control meta-test.
  replica_config cfg;
  cfg.max_inflight_bytes = 2000;
  cfg.max_batch_bytes = 500;
  cfg.unsafe_ignore_window = true;
  group g{3, cfg};
  g.elect(1, 1);
  g.set_filter([](node_id from, node_id, const message&) { return from == node_id{3}; });
  for (int round = 0; round < 20; ++round)
    g.propose(1, 10);
  EXPECT_GT(g.core(1).stats().peak_inflight_bytes,
            cfg.max_inflight_bytes + cfg.max_batch_bytes);
}

// -- role change
// ---------------------------------------------------------------------------

TEST(replica_core, stepping_down_fails_uncommitted_transactions_with_a_retryable_error) {
  group g{3};
  g.elect(1, 1);
  g.set_filter([](node_id, node_id to, const message&) { return to != node_id{1}; });
  g.propose(1, 3);
  g.propose(1, 1, commit_mode::weak);
  g.core(1).step_down(g.now());
  g.drain();
  auto& h = g.at(node_id{1});
  EXPECT_EQ(h.failed.size(), 3u); // the weak one was acknowledged already
  for (auto& f : h.failed)
    EXPECT_EQ(f.reason, errc::primary_changed);
  EXPECT_EQ(g.core(1).current_role(), role::secondary);
  EXPECT_FALSE(g.core(1).become_primary(term_of_epoch(1, 1), g.now()));
  EXPECT_TRUE(g.core(1).become_primary(term_of_epoch(2, 1), g.now()));
}

TEST(replica_core, a_lower_or_foreign_term_does_not_make_a_primary) {
  group g{3};
  g.elect(2, 3);
  EXPECT_FALSE(g.core(1).become_primary(term_of_epoch(2, 1), g.now()));
  EXPECT_FALSE(g.core(1).become_primary(term_of_epoch(9, 2), g.now()));
  EXPECT_EQ(g.core(1).current_role(), role::secondary);
}

} // namespace

// -- amnesia (a replica whose damaged log was moved aside) ------------------------

namespace {

/// Three replicas: 2 leads epoch 1 and commits `n` records while 3 hears
/// nothing, so 1 and 2 are the majority that holds them.
void commit_without_3(group& g, int n) {
  g.set_filter([](node_id, node_id to, const message&) { return to == node_id{3}; });
  g.elect(2, 1);
  g.propose(2, n);
  g.set_filter(nullptr);
}

/// Node 1 restarts with no log; its promised term survives.
void lose_log_of_1(group& g, bool amnesiac) {
  recovered_state st;
  st.promised = g.at(node_id{1}).persisted;
  st.amnesiac = amnesiac;
  g.restart(node_id{1}, st);
}

} // namespace

TEST(replica_core,
     an_amnesiac_replica_is_not_counted_when_a_new_primary_chooses_its_log) {
  group g{3};
  commit_without_3(g, 3);
  ASSERT_EQ(g.core(2).commit_lsn(), lsn{4}); // new_primary + 3
  ASSERT_EQ(g.core(3).log().last(), lsn{0});
  lose_log_of_1(g, true);
  // 2 is down: 3 becomes primary with 1's vote of confidence only.
  g.set_filter([](node_id from, node_id to, const message&) {
    return from == node_id{2} || to == node_id{2};
  });
  g.elect(3, 2);
  EXPECT_FALSE(g.core(3).serving()); // no majority that may choose
  EXPECT_GE(g.core(1).stats().syncs_withheld, 1u);
  EXPECT_TRUE(g.core(1).amnesiac());
  // 2 is back: the sync counts 2 and finds the committed records.
  g.set_filter(nullptr);
  g.advance(100ms);
  g.tick_all();
  ASSERT_TRUE(g.core(3).serving());
  EXPECT_EQ(g.core(3).log().at(lsn{4}).payload, g.core(2).log().at(lsn{4}).payload);
  EXPECT_TRUE(same_log(g.core(3), g.core(2)));
  // 1 follows 3, holds its log through a record of 3's term: healed.
  g.propose(3, 1);
  EXPECT_TRUE(same_log(g.core(3), g.core(1)));
  EXPECT_FALSE(g.core(1).amnesiac());
}

TEST(replica_core, without_the_amnesia_rule_the_same_schedule_loses_committed_records) {
  // The rule's reason, shown: the same schedule with node 1 restarted empty
  // but not marked amnesiac lets 3 choose an empty log.
  group g{3};
  commit_without_3(g, 3);
  auto committed = g.core(2).log().at(lsn{2}).payload;
  lose_log_of_1(g, false);
  g.set_filter([](node_id from, node_id to, const message&) {
    return from == node_id{2} || to == node_id{2};
  });
  g.elect(3, 2);
  ASSERT_TRUE(g.core(3).serving());
  ASSERT_GE(g.core(3).log().last(), lsn{1});
  EXPECT_EQ(g.core(3).log().at(lsn{1}).kind, entry_kind::new_primary);
  EXPECT_NE(g.core(3).log().last(), lsn{4}); // records 2..4 of epoch 1 are gone
}

TEST(replica_core, an_amnesiac_primary_chooses_from_a_majority_of_the_others) {
  group g{3};
  commit_without_3(g, 2);
  lose_log_of_1(g, true);
  // 1 becomes primary; 3 (empty) answers at once, 2 is cut off: not enough.
  g.set_filter([](node_id from, node_id to, const message&) {
    return from == node_id{2} || to == node_id{2};
  });
  g.elect(1, 2);
  EXPECT_FALSE(g.core(1).serving());
  EXPECT_TRUE(g.core(1).amnesiac());
  g.set_filter(nullptr);
  g.advance(100ms);
  g.tick_all();
  ASSERT_TRUE(g.core(1).serving());
  EXPECT_FALSE(g.core(1).amnesiac());
  // It fetched 2's records: the committed ones are there, then its new_primary.
  EXPECT_EQ(g.core(1).log().at(lsn{3}).payload, g.core(2).log().at(lsn{3}).payload);
  EXPECT_EQ(g.core(1).log().at(lsn{4}).kind, entry_kind::new_primary);
}

TEST(replica_core, an_amnesiac_secondary_heals_through_a_snapshot_of_the_current_term) {
  group g{3};
  g.elect(2, 1);
  g.propose(2, 5);
  lose_log_of_1(g, true);
  // The primary checkpointed everything: 1 is behind its base.
  g.core(2).checkpointed(g.core(2).commit_lsn());
  g.propose(2, 1); // ships to 1, which holds nothing: a snapshot is due
  ASSERT_FALSE(g.at(node_id{2}).snapshots.empty());
  auto s = g.at(node_id{2}).snapshots.back();
  EXPECT_TRUE(g.core(1).amnesiac());
  EXPECT_TRUE(g.core(1).snapshot_offered(node_id{2}, g.core(2).promised(), s.at,
                                         s.at_term, g.now()));
  // A checkpoint of the current term is not enough: the primary's log goes on
  // past it, and records after it may be ones this replica acknowledged
  // before the loss.
  ASSERT_LT(s.at, g.core(2).log().last());
  EXPECT_TRUE(g.core(1).amnesiac());
  g.run();
  g.advance(100ms);
  g.tick_all();
  EXPECT_FALSE(g.core(1).amnesiac());
  EXPECT_TRUE(same_log(g.core(2), g.core(1)));
}
