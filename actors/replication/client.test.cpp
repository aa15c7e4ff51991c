// The client library against three replica hosts on CAF's test coordinator
// (virtual time, memory devices): it finds the primary through a secondary's
// hint, waits out a sync phase, retries idempotent transactions across a
// crashed or deposed primary and answers outcome_unknown for the others,
// gives up at its deadline, and never lets two clients dequeue one item,
// across randomized failovers. The blocking facade runs once on a real
// scheduler.
#include "actors/replication/client.hpp"

#include "tests/support/real_replica_set.hpp"
#include "tests/support/replica_set_fixture.hpp"

#include <caf/scoped_actor.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::store::memory_log_device;
using conclave::testing::ask;
using conclave::testing::reply;

namespace {

/// What the randomized dequeue schedules saw.
struct dequeue_run {
  size_t got = 0;
  size_t lost = 0;
  int unknown = 0;
  int failovers = 0;
};

class client_test : public conclave::replication::testing::replica_set_fixture {
protected:
  /// The replica host of a member, or nothing while the test says it is
  /// unreachable. Every lookup is recorded.
  caf::actor lookup(node_id id) {
    looked_up.push_back(id);
    if (auto i = stand_in.find(id); i != stand_in.end())
      return i->second;
    for (auto& r : rs)
      if (r.id == id && !unreachable.count(id))
        return r.host;
    return {};
  }

  caf::actor make_client(uint64_t seed = 1, caf::timespan attempt_timeout = 100ms,
                         bool sessions = true) {
    client_options o;
    o.sessions = sessions;
    o.session_id = "client-" + std::to_string(seed);
    o.members = members();
    o.lookup = [this](node_id id) { return lookup(id); };
    o.attempt_timeout = attempt_timeout;
    o.deadline = 2s;
    o.seed = seed;
    return track(spawn_client(sys(), o));
  }

  template <class Result, class Request>
  Result wait(const caf::actor& client, Request req, caf::timespan limit = 3s) {
    auto r = ask<Result>(sys(), client, std::move(req));
    EXPECT_TRUE(advance_until([&] { return r->done; }, limit));
    EXPECT_TRUE(r->value);
    if (!r->value) {
      Result out;
      out.code = errc::timeout;
      return out;
    }
    return *r->value;
  }

  static txn_request put_req(std::string k, std::string v) {
    return txn_request{{txn_op{"d", std::move(k), std::move(v), op_kind::put}}, {}};
  }
  static txn_request enqueue_req(std::string v) {
    return txn_request{{txn_op{"q", "", std::move(v), op_kind::enqueue}}, {}};
  }
  static txn_request dequeue_req() {
    return txn_request{{txn_op{"q", "", "", op_kind::dequeue}}, {}};
  }

  /// The devices of these replicas stop completing syncs (their records stay
  /// unsynced, so no quorum forms), or complete the held ones and go on.
  void hold_syncs(std::initializer_list<size_t> replicas) {
    for (auto i : replicas)
      rs[i].device->set_auto_sync(false);
  }
  void release_syncs(std::initializer_list<size_t> replicas) {
    for (auto i : replicas) {
      rs[i].device->release_syncs();
      rs[i].device->set_auto_sync(true);
    }
  }

  dequeue_run dequeue_schedules(bool sessions);

  /// The compare-and-set (k absent -> v) both retry tests send.
  static txn_request cas_request() {
    return {{txn_op{"d", "k", "", op_kind::expect_absent},
             txn_op{"d", "k", "v", op_kind::put}},
            {}};
  }
  /// Its schedule: the request reaches the secondaries' logs but no quorum
  /// acknowledges it before primary 2 dies; node 0 then becomes primary,
  /// whose sync phase keeps the record. The client's answer once it came.
  std::optional<txn_result> cas_across_a_primary_crash(const caf::actor& c) {
    hold_syncs({0, 1});
    auto r = ask<txn_result>(sys(), c, cas_request());
    advance(10ms);
    EXPECT_FALSE(r->done);
    crash(2);
    run();
    EXPECT_FALSE(r->done); // idempotent: retried
    release_syncs({0, 1});
    make_primary(0, 2);
    if (!advance_until([&] { return r->done; }, 2s))
      return std::nullopt;
    return r->value;
  }

  std::vector<node_id> looked_up;
  std::set<node_id> unreachable;
  /// Actors answering instead of a member's host.
  std::map<node_id, caf::actor> stand_in;
};

TEST_F(client_test, client_asking_a_secondary_is_redirected_to_the_primary) {
  make_primary(2, 1);
  auto c = make_client();
  auto r = wait<txn_result>(c, put_req("k", "v"));
  EXPECT_EQ(r.code, errc::ok);
  // Member 1 first (it knows no primary yet), then the primary it named.
  EXPECT_EQ(looked_up, (std::vector<node_id>{rs[0].id, rs[2].id}));
  // Reads and lists go to the primary it now knows.
  auto g = wait<read_result>(c, read_request{"d", "k"});
  EXPECT_EQ(g.code, errc::ok);
  EXPECT_TRUE(g.found);
  EXPECT_EQ(g.value, "v");
  EXPECT_EQ(g.replica_role, role::primary);
  auto l = wait<list_result>(c, list_request{"d", "", "", 0});
  ASSERT_EQ(l.items.size(), 1u);
  EXPECT_EQ(l.items[0].key, "k");
  EXPECT_EQ(looked_up.size(), 4u);
  EXPECT_EQ(looked_up.back(), rs[2].id);
}

TEST_F(client_test, a_read_answered_by_a_secondary_is_asked_again_at_the_primary) {
  make_primary(2, 1);
  auto c = make_client();
  auto g = wait<read_result>(c, read_request{"d", "nothing"});
  EXPECT_EQ(g.code, errc::ok);
  EXPECT_FALSE(g.found);
  EXPECT_EQ(g.replica_role, role::primary);
  EXPECT_EQ(looked_up, (std::vector<node_id>{rs[0].id, rs[2].id}));
}

TEST_F(client_test, a_read_refused_by_a_primary_without_its_lease_is_asked_elsewhere) {
  make_primary(2, 1);
  // Member 1 answers like a node whose primary lost its lease
  // (runtime/node/replica_front.hpp): not_primary, no primary named.
  stand_in[rs[0].id] = track(sys().spawn([]() -> caf::behavior {
    return {[](const read_request&) {
      read_result r;
      r.code = errc::not_primary;
      r.replica_role = role::secondary;
      return r;
    }};
  }));
  auto c = make_client();
  auto g = wait<read_result>(c, read_request{"d", "nothing"});
  EXPECT_EQ(g.code, errc::ok);
  EXPECT_EQ(g.replica_role, role::primary);
  EXPECT_EQ(looked_up.front(), rs[0].id);
}

TEST_F(client_test, client_waits_out_the_sync_phase_of_a_new_primary) {
  // The secondaries' syncs are held: the new primary's sync phase cannot
  // finish (its new_primary record is durable on itself only).
  hold_syncs({0, 2});
  auto ok = ask<bool>(sys(), rs[1].host, become_primary_msg{term{1, rs[1].id, 0}});
  advance(5ms);
  ASSERT_TRUE(ok->value && *ok->value);
  ASSERT_FALSE(status(1).serving);
  // A read there says syncing: its applied state may miss acknowledged commits.
  auto early = ask<read_result>(sys(), rs[1].host, read_request{"d", "k"});
  run();
  EXPECT_EQ(early->value->replica_role, role::syncing);
  auto c = make_client();
  auto r = ask<txn_result>(sys(), c, put_req("k", "v"));
  advance(100ms);
  EXPECT_FALSE(r->done);
  auto asked_primary = std::count(looked_up.begin(), looked_up.end(), rs[1].id);
  EXPECT_GE(asked_primary, 2); // asked again after syncing
  rs[0].device->set_auto_sync(true);
  rs[0].device->release_syncs();
  ASSERT_TRUE(advance_until([&] { return r->done; }, 1s));
  EXPECT_EQ(r->value->code, errc::ok);
  EXPECT_EQ(read(1, "k").value, "v");
}

TEST_F(client_test, crashed_primary_mid_stream_puts_retry_and_commit_on_the_new_one) {
  make_primary(2, 1);
  auto c = make_client();
  std::vector<std::shared_ptr<reply<txn_result>>> puts;
  for (int i = 0; i < 10; ++i)
    puts.push_back(ask<txn_result>(sys(), c, put_req("k" + std::to_string(i), "v")));
  // Some commit, then the primary dies with the rest in flight.
  run_until([&] { return puts[3]->done; });
  ASSERT_FALSE(puts.back()->done);
  crash(2);
  advance(20ms);
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return conclave::all_done(puts); }, 2s));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(puts[i]->value) << i;
    EXPECT_EQ(puts[i]->value->code, errc::ok) << i;
    EXPECT_TRUE(read(0, "k" + std::to_string(i)).found) << i;
  }
}

TEST_F(client_test, a_host_dying_with_requests_in_flight_ends_them_at_once) {
  make_primary(2, 1);
  // A long attempt timeout: only the host's down_msg can end the attempts
  // early.
  auto c = make_client(1, 1s, false);
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  // The primary cannot commit (both secondaries' syncs held): a put and an
  // enqueue wait there when it dies.
  hold_syncs({0, 1});
  auto p = ask<txn_result>(sys(), c, put_req("k", "v"));
  auto e = ask<txn_result>(sys(), c, enqueue_req("item"));
  advance(10ms);
  ASSERT_FALSE(p->done);
  ASSERT_FALSE(e->done);
  crash(2);
  run();
  // Without sessions the enqueue may have been logged: unknown at once, not
  // after 1 s.
  ASSERT_TRUE(e->done && e->value);
  EXPECT_EQ(e->value->code, errc::outcome_unknown);
  EXPECT_FALSE(p->done);
  release_syncs({0, 1});
  make_primary(0, 2);
  // The put is retried on the new primary well before the first attempt's
  // timeout would have fired.
  ASSERT_TRUE(advance_until([&] { return p->done; }, 300ms));
  EXPECT_EQ(p->value->code, errc::ok);
  EXPECT_EQ(read(0, "k").value, "v");
}

TEST_F(client_test,
       a_sessioned_enqueue_in_flight_at_a_dying_host_is_retried_and_added_once) {
  make_primary(2, 1);
  auto c = make_client(1, 1s);
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  hold_syncs({0, 1});
  auto e = ask<txn_result>(sys(), c, enqueue_req("item"));
  advance(10ms);
  crash(2);
  run();
  EXPECT_FALSE(e->done); // retried, not unknown
  release_syncs({0, 1});
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return e->done; }, 300ms));
  EXPECT_EQ(e->value->code, errc::ok);
  // The first attempt reached the secondaries' logs and the new primary kept
  // it; the retry was answered from the session table: one item.
  auto d = wait<txn_result>(c, dequeue_req());
  ASSERT_EQ(d.code, errc::ok);
  EXPECT_EQ(d.outputs.at(0).value, "item");
  EXPECT_FALSE(wait<txn_result>(c, dequeue_req()).outputs.at(0).found);
}

TEST_F(client_test, a_dequeue_whose_answer_is_lost_at_a_primary_change_gets_its_item) {
  make_primary(2, 1);
  auto c = make_client(1, 1s);
  ASSERT_EQ(wait<txn_result>(c, enqueue_req("a")).code, errc::ok);
  ASSERT_EQ(wait<txn_result>(c, enqueue_req("b")).code, errc::ok);
  // The dequeue reaches every log but the primary is deposed before it
  // answers: its answer (the item) is lost with it.
  hold_syncs({0, 1});
  auto d = ask<txn_result>(sys(), c, dequeue_req());
  advance(10ms);
  ASSERT_FALSE(d->done);
  caf::anon_send(rs[2].host, leader_is_msg{term{2, rs[0].id, 0}});
  run();
  EXPECT_FALSE(d->done); // retried, not unknown
  release_syncs({0, 1});
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return d->done; }, 2s));
  ASSERT_TRUE(d->value);
  // The new primary committed the first attempt (it took "a"); the retry
  // gets that item instead of taking "b".
  EXPECT_EQ(d->value->code, errc::ok);
  ASSERT_EQ(d->value->outputs.size(), 1u);
  EXPECT_EQ(d->value->outputs[0].value, "a");
  auto next = wait<txn_result>(c, dequeue_req());
  EXPECT_EQ(next.outputs.at(0).value, "b");
  EXPECT_FALSE(wait<txn_result>(c, dequeue_req()).outputs.at(0).found);
}

TEST_F(client_test,
       a_sessioned_compare_and_set_retried_after_a_crash_reports_its_success) {
  make_primary(2, 1);
  auto c = make_client(1, 1s);
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  auto r = cas_across_a_primary_crash(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(read(0, "k").value, "v");
  // The first attempt committed; the retry gets its outcome (ok, two
  // outputs: the caller's ops), not condition_failed or unknown.
  EXPECT_EQ(r->code, errc::ok);
  EXPECT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(wait<txn_result>(c, cas_request()).code, errc::condition_failed);
  uint64_t dups = 0;
  for (size_t i = 0; i < 2; ++i) // 2 crashed
    dups += status(i).session_duplicates;
  EXPECT_GE(dups, 1u);
}

TEST_F(client_test, a_condition_failed_by_a_retry_after_an_unknown_attempt_is_unknown) {
  make_primary(2, 1);
  auto c = make_client(1, 1s, false);
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  // The first attempt committed, and the retry finds k present.
  auto r = cas_across_a_primary_crash(c);
  ASSERT_TRUE(r);
  EXPECT_EQ(read(0, "k").value, "v");
  // condition_failed would tell the caller "someone else holds k": wrong,
  // it was this very request. Unknown is the truth.
  EXPECT_EQ(r->code, errc::outcome_unknown);
  // Without an unknown attempt before it, a failed condition stays what it is.
  EXPECT_EQ(wait<txn_result>(c, cas_request()).code, errc::condition_failed);
}

TEST_F(client_test, deposed_primary_idempotent_put_is_retried_enqueue_is_not) {
  make_primary(2, 1);
  auto c = make_client(1, 100ms, false);
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  // The primary cannot commit (both secondaries' syncs held), then is deposed.
  hold_syncs({0, 1});
  auto p = ask<txn_result>(sys(), c, put_req("k", "v"));
  auto e = ask<txn_result>(sys(), c, enqueue_req("item"));
  advance(10ms);
  ASSERT_FALSE(p->done);
  ASSERT_FALSE(e->done);
  auto down = ask<bool>(sys(), rs[2].host, leader_is_msg{term{2, rs[0].id, 0}});
  run();
  ASSERT_TRUE(e->done && e->value);
  EXPECT_EQ(e->value->code, errc::outcome_unknown);
  EXPECT_FALSE(p->done); // retrying
  release_syncs({0, 1});
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return p->done; }, 2s));
  EXPECT_EQ(p->value->code, errc::ok);
  EXPECT_EQ(read(0, "k").value, "v");
  // The enqueue ran at most once: the queue holds zero or one item.
  auto first = wait<txn_result>(c, dequeue_req());
  if (first.code == errc::ok && first.outputs.at(0).found) {
    EXPECT_EQ(first.outputs[0].value, "item");
    EXPECT_FALSE(wait<txn_result>(c, dequeue_req()).outputs.at(0).found);
  } else {
    EXPECT_TRUE(first.code == errc::unknown_collection
                || (first.code == errc::ok && !first.outputs.at(0).found));
  }
}

TEST_F(client_test, enqueue_sent_to_a_dead_primary_was_never_handled_and_is_retried) {
  make_primary(2, 1);
  auto c = make_client();
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  crash(2); // the client still thinks it is primary
  auto e = ask<txn_result>(sys(), c, enqueue_req("once"));
  advance(20ms);
  ASSERT_FALSE(e->done);
  make_primary(0, 2);
  ASSERT_TRUE(advance_until([&] { return e->done; }, 2s));
  EXPECT_EQ(e->value->code, errc::ok);
  auto d = wait<txn_result>(c, dequeue_req());
  EXPECT_EQ(d.outputs.at(0).value, "once");
  EXPECT_FALSE(wait<txn_result>(c, dequeue_req()).outputs.at(0).found);
}

TEST_F(client_test, without_a_primary_the_client_gives_up_at_its_deadline) {
  auto c = make_client();
  auto start = now();
  auto p = ask<txn_result>(sys(), c, put_req("k", "v"));
  auto e = ask<txn_result>(sys(), c, enqueue_req("x"));
  auto g = ask<read_result>(sys(), c, read_request{"d", "k"});
  ASSERT_TRUE(advance_until([&] { return p->done && e->done && g->done; }, 3s));
  // It stops when the next backoff would cross the deadline.
  EXPECT_GE(now() - start, 1700ms);
  EXPECT_EQ(p->value->code, errc::timeout);
  // Only not_primary answers: nothing ambiguous was sent, so timeout.
  EXPECT_EQ(e->value->code, errc::timeout);
  EXPECT_EQ(g->value->code, errc::timeout);
  EXPECT_GT(looked_up.size(), 6u); // it kept trying the members
}

TEST_F(client_test, a_sessioned_transaction_is_not_sent_again_past_the_retry_window) {
  make_primary(2, 1);
  client_options o;
  o.members = members();
  o.lookup = [this](node_id id) { return lookup(id); };
  o.attempt_timeout = 1s;
  o.deadline = 120s;
  auto c = track(spawn_client(sys(), o));
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  // The enqueue reaches the logs, the primary dies, and no primary is made
  // for longer than the window: the secondaries keep naming the dead one.
  hold_syncs({0, 1});
  auto start = now();
  auto e = ask<txn_result>(sys(), c, enqueue_req("late"));
  advance(10ms);
  crash(2);
  run();
  ASSERT_TRUE(advance_until([&] { return e->done; }, 70s));
  EXPECT_EQ(e->value->code, errc::outcome_unknown);
  // Ended at the window, not at the 120 s deadline.
  EXPECT_GE(now() - start, session_retry_window);
  EXPECT_LT(now() - start, session_retry_window + 1s);
  // Nothing was sent after it: a primary made now gets no retry.
  release_syncs({0, 1});
  looked_up.clear();
  make_primary(0, 2);
  advance(1s);
  EXPECT_TRUE(looked_up.empty());
}

TEST_F(client_test, a_request_that_times_out_tells_what_its_attempts_ran_into) {
  make_primary(2, 1);
  unreachable.insert(rs[2].id); // the primary the others name
  client_options o;
  o.members = members();
  o.lookup = [this](node_id id) { return lookup(id); };
  o.deadline = 500ms;
  auto lines = std::make_shared<std::vector<std::string>>();
  o.on_problem = [lines](const std::string& l) { lines->push_back(l); };
  auto c = track(spawn_client(sys(), o));
  auto r = wait<txn_result>(c, put_req("k", "v"));
  EXPECT_EQ(r.code, errc::timeout);
  auto has = [&](const std::string& what) {
    return std::any_of(lines->begin(), lines->end(), [&](const std::string& l) {
      return l.find(what) != std::string::npos;
    });
  };
  EXPECT_TRUE(has("not_primary, names node " + std::to_string(rs[2].id.value)));
  EXPECT_TRUE(has("node " + std::to_string(rs[2].id.value)
                  + ": the primary last named, not connected"));
}

TEST_F(client_test, unreachable_members_are_skipped) {
  make_primary(2, 1);
  unreachable.insert(rs[0].id);
  unreachable.insert(rs[1].id);
  auto c = make_client();
  EXPECT_EQ(wait<txn_result>(c, put_req("k", "v")).code, errc::ok);
  EXPECT_EQ(looked_up.back(), rs[2].id);
}

TEST_F(client_test, the_primary_named_beforehand_is_asked_first) {
  make_primary(2, 1);
  client_options o;
  o.members = members();
  o.lookup = [this](node_id id) { return lookup(id); };
  o.primary = rs[2].id; // as a member's gate named it at connect time
  auto c = track(spawn_client(sys(), o));
  EXPECT_EQ(wait<txn_result>(c, put_req("k", "v")).code, errc::ok);
  EXPECT_EQ(looked_up, (std::vector<node_id>{rs[2].id}));
}

TEST_F(client_test, an_unreachable_named_primary_costs_no_backoff) {
  make_primary(2, 1);
  unreachable.insert(rs[0].id);
  client_options o;
  o.members = members();
  o.lookup = [this](node_id id) { return lookup(id); };
  o.primary = rs[0].id; // named, but not connected: the next member at once
  auto c = track(spawn_client(sys(), o));
  auto r = ask<txn_result>(sys(), c, put_req("k", "v"));
  run(); // no time passes: no backoff was needed
  ASSERT_TRUE(r->done);
  EXPECT_EQ(r->value->code, errc::ok);
  EXPECT_EQ(looked_up, (std::vector<node_id>{rs[0].id, rs[0].id, rs[1].id, rs[2].id}));
}

TEST_F(client_test, bad_requests_come_back_typed_and_are_not_retried) {
  make_primary(2, 1);
  auto c = make_client();
  ASSERT_EQ(wait<txn_result>(c, put_req("warm", "up")).code, errc::ok);
  auto n = looked_up.size();
  EXPECT_EQ(wait<txn_result>(c, put_req("", "v")).code, errc::bad_request);
  EXPECT_EQ(wait<txn_result>(c, dequeue_req()).code, errc::unknown_collection);
  EXPECT_EQ(looked_up.size(), n + 2); // one attempt each
}

/// Clients dequeue concurrently while the primary crashes or is replaced at
/// random moments. Every item is handed to at most one client; an item that
/// nobody got and that is not left in the queue was taken by a dequeue whose
/// answer was outcome_unknown.
TEST_F(client_test, dequeue_never_hands_one_item_to_two_clients_across_failovers) {
  auto r = dequeue_schedules(false);
  // The schedules did exercise both paths: without sessions a dequeue whose
  // answer is lost takes an item nobody receives.
  EXPECT_GT(r.got, 0u);
  EXPECT_GT(r.unknown, 0);
}

TEST_F(client_test, with_sessions_every_item_is_dequeued_exactly_once_across_failovers) {
  auto r = dequeue_schedules(true);
  EXPECT_GT(r.got, 0u);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_EQ(r.unknown, 0);
  EXPECT_GE(r.failovers, 12);
}

dequeue_run client_test::dequeue_schedules(bool sessions) {
  dequeue_run out;
  constexpr int seeds = 12;
  constexpr int items = 120;
  size_t total_got = 0;
  int total_unknown = 0;
  int failovers = 0;
  size_t total_lost = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // A fresh replica set per seed.
    for (auto& r : rs) {
      caf::anon_send_exit(r.host, caf::exit_reason::kill);
      run();
      r.device = std::make_shared<memory_log_device>();
      r.terms = std::make_shared<memory_term_file>();
    }
    for (size_t i = 0; i < rs.size(); ++i)
      spawn(i);
    std::mt19937_64 rng(seed);
    uint64_t epoch = 1;
    size_t primary = rng() % 3;
    make_primary(primary, epoch);
    auto feeder = make_client(seed * 1000, 100ms, sessions);
    for (int i = 0; i < items; ++i)
      EXPECT_EQ(wait<txn_result>(feeder, enqueue_req("item" + std::to_string(i))).code,
                errc::ok);
    std::vector<caf::actor> clients;
    std::vector<std::shared_ptr<reply<txn_result>>> inflight(3);
    for (int i = 0; i < 3; ++i)
      clients.push_back(make_client(seed * 10 + i, 100ms, sessions));
    std::multiset<std::string> got;
    int unknown = 0;
    std::optional<size_t> crashed;
    bool empty_seen = false;
    auto step_clients = [&] {
      for (size_t i = 0; i < clients.size(); ++i) {
        auto& f = inflight[i];
        if (f && !f->done)
          continue;
        if (f && f->value) {
          auto& r = *f->value;
          if (r.code == errc::ok && r.outputs.at(0).found)
            got.insert(r.outputs[0].value);
          else if (r.code == errc::ok)
            empty_seen = true;
          else if (r.code == errc::outcome_unknown)
            ++unknown;
        }
        f = empty_seen ? nullptr : ask<txn_result>(sys(), clients[i], dequeue_req());
      }
    };
    for (int t = 0; t < 2000 && !empty_seen; ++t) {
      step_clients();
      if (rng() % 12 != 0) {
        advance(1ms);
        continue;
      }
      // Mid-flight: a random number of jobs run, then the failover.
      int jobs = static_cast<int>(rng() % 40);
      run_until([&] { return jobs-- <= 0; });
      // A failover: restart what crashed before, then crash the primary or
      // elect another replica over it.
      if (crashed) {
        spawn(*crashed);
        crashed.reset();
      }
      auto next = (primary + 1 + rng() % 2) % 3;
      if (rng() % 2 == 0) {
        crash(primary);
        crashed = primary;
      } else if (rng() % 2 == 0) {
        caf::anon_send(rs[primary].host, leader_is_msg{term{epoch + 1, rs[next].id, 0}});
      }
      make_primary(next, ++epoch);
      primary = next;
      ++failovers;
    }
    if (crashed)
      spawn(*crashed);
    // Let the last answers arrive, then drain what is left.
    EXPECT_TRUE(advance_until(
        [&] {
          for (auto& f : inflight)
            if (f && !f->done)
              return false;
          return true;
        },
        3s));
    empty_seen = true;
    step_clients();
    std::multiset<std::string> left;
    for (;;) {
      auto r = wait<txn_result>(feeder, dequeue_req());
      EXPECT_EQ(r.code, errc::ok);
      if (r.code != errc::ok || !r.outputs.at(0).found)
        break;
      left.insert(r.outputs[0].value);
    }
    std::set<std::string> seen;
    for (auto& x : got) {
      EXPECT_EQ(got.count(x), 1u) << x << " handed out twice";
      EXPECT_EQ(left.count(x), 0u) << x << " handed out and still queued";
      seen.insert(x);
    }
    for (auto& x : left)
      seen.insert(x);
    EXPECT_LE(static_cast<int>(items - seen.size()), unknown);
    std::set<std::string> enqueued;
    for (int i = 0; i < items; ++i)
      enqueued.insert("item" + std::to_string(i));
    for (auto& x : seen)
      EXPECT_EQ(enqueued.count(x), 1u) << x;
    total_got += got.size();
    total_lost += items - seen.size();
    total_unknown += unknown;
    for (auto& cl : clients)
      caf::anon_send_exit(cl, caf::exit_reason::kill);
    caf::anon_send_exit(feeder, caf::exit_reason::kill);
    run();
  }
  EXPECT_GE(failovers, seeds);
  std::printf("dequeue schedules (sessions %s): %d seeds, %d failovers, %zu items "
              "handed out, %zu taken by %d dequeues of unknown outcome\n",
              sessions ? "on" : "off", seeds, failovers, total_got, total_lost,
              total_unknown);
  out.got = total_got;
  out.lost = total_lost;
  out.unknown = total_unknown;
  out.failovers = failovers;
  return out;
}

// -- the blocking facade, on a real scheduler -------------------------------------

TEST(kv_client, blocking_calls_run_against_three_hosts_on_a_real_scheduler) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::conclave_replication>();
  cfg.set("logger.file-verbosity", caf::atom("quiet"));
  caf::actor_system sys{cfg};
  conclave::replication::testing::real_replica_set set{sys};
  ASSERT_TRUE(set.primary_up);
  {
    kv_client kv{sys, set.options()};
    EXPECT_EQ(kv.put("d", "user/1", "ann").code, errc::ok);
    EXPECT_EQ(kv.put("d", "user/2", "bob").code, errc::ok);
    EXPECT_EQ(kv.get("d", "user/1").value, "ann");
    auto l = kv.list("d", "user/", 1);
    ASSERT_EQ(l.items.size(), 1u);
    EXPECT_TRUE(l.more);
    EXPECT_EQ(kv.list("d", "user/", 0, l.items[0].key).items.at(0).value, "bob");
    auto rm = kv.remove("d", "user/2");
    EXPECT_TRUE(rm.outputs.at(0).found);
    EXPECT_FALSE(kv.get("d", "user/2").found);
    EXPECT_EQ(kv.enqueue("jobs", "j1").code, errc::ok);
    auto d = kv.dequeue("jobs");
    EXPECT_EQ(d.outputs.at(0).value, "j1");
    EXPECT_FALSE(kv.dequeue("jobs").outputs.at(0).found);
    EXPECT_EQ(kv.compare_and_set("d", "lock", std::nullopt, std::string{"me"}).code,
              errc::ok);
    auto lost = kv.compare_and_set("d", "lock", std::nullopt, std::string{"you"});
    EXPECT_EQ(lost.code, errc::condition_failed);
    EXPECT_EQ(lost.outputs.at(0).value, "me");
    EXPECT_EQ(kv.compare_and_set("d", "lock", std::string{"me"}, std::nullopt).code,
              errc::ok);
    EXPECT_FALSE(kv.get("d", "lock").found);
  }
}

} // namespace
