// The thread-free store host on CAF's test coordinator: commits answered only
// once the device's sync event arrives, lock waits answered on grant, lock
// timeouts in virtual time, device failures, restart on the same device.
#include "actors/store/store_host.hpp"

#include "storage/api/memory_log_device.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"
#include "tests/support/store_requests.hpp"

using namespace conclave::store;
using namespace std::chrono_literals;
using conclave::testing::ask;
namespace atoms = conclave::store_atoms;

namespace {

class store_host_test : public conclave::testing::coordinator_fixture {
protected:
  void configure(caf::actor_system_config& cfg) override { add_store_types(cfg); }

  void SetUp() override {
    coordinator_fixture::SetUp();
    device = std::make_shared<memory_log_device>();
    host = start();
  }

  store_actor start(bool strong = true) {
    store_host_options o;
    o.device = device;
    o.strong = strong;
    auto h = track(spawn_store_host(sys(), o));
    auto opened =
        ask<bool>(sys(), h, atoms::open_atom_v, std::string{"d"},
                  collection_kind::dictionary, std::string{"k"}, std::string{"v"});
    run();
    EXPECT_TRUE(opened->done && opened->value) << caf::to_string(opened->error);
    return h;
  }

  txn_id begin() {
    auto t = ask<txn_id>(sys(), host, atoms::begin_atom_v);
    run();
    return *t->value;
  }

  op_request req(txn_id t, operation op, std::string key, std::string value = {}) {
    return conclave::test::dictionary_request(t, op, std::move(key), std::move(value));
  }

  /// Writes key=value in its own committed transaction.
  void put(const std::string& k, const std::string& v) {
    auto t = begin();
    ask<op_result>(sys(), host, req(t, operation::add_or_update, k, v), uint32_t{0});
    auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t);
    run();
    ASSERT_TRUE(c->value) << caf::to_string(c->error);
  }

  std::optional<std::string> get(const std::string& k) {
    auto t = begin();
    auto r = ask<op_result>(sys(), host, req(t, operation::try_get, k), uint32_t{0});
    run();
    ask<bool>(sys(), host, atoms::abort_atom_v, t);
    run();
    if (!r->value || !r->value->found)
      return std::nullopt;
    return r->value->value;
  }

  std::shared_ptr<memory_log_device> device;
  store_actor host;
};

} // namespace

TEST_F(store_host_test, a_commit_is_answered_only_after_the_sync_event) {
  device->set_auto_sync(false);
  auto t = begin();
  auto w = ask<op_result>(sys(), host, req(t, operation::add, "a", "1"), uint32_t{0});
  run();
  ASSERT_TRUE(w->value);
  auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t);
  run();
  EXPECT_FALSE(c->done);
  EXPECT_EQ(device->held_syncs(), 1u);
  device->release_syncs();
  run();
  ASSERT_TRUE(c->done);
  EXPECT_EQ(*c->value, device->durable_lsn().value);
  EXPECT_EQ(get("a"), "1");
}

TEST_F(store_host_test, commits_during_a_sync_share_the_next_one) {
  device->set_auto_sync(false);
  std::vector<std::shared_ptr<conclave::testing::reply<uint64_t>>> commits;
  for (int i = 0; i < 5; ++i) {
    auto t = begin();
    ask<op_result>(sys(), host, req(t, operation::add, "k" + std::to_string(i), "v"),
                   uint32_t{0});
    commits.push_back(ask<uint64_t>(sys(), host, atoms::commit_atom_v, t));
    run();
  }
  auto before = device->syncs();
  device->release_syncs(); // the first commit's sync
  run();
  device->release_syncs(); // one sync for the four others
  run();
  for (auto& c : commits)
    EXPECT_TRUE(c->done && c->value);
  EXPECT_EQ(device->syncs() - before, 1u);
}

TEST_F(store_host_test, a_waiting_read_is_answered_when_the_writer_commits) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "new"), uint32_t{0});
  run();
  auto t2 = begin();
  auto r = ask<op_result>(sys(), host, req(t2, operation::try_get, "x"), uint32_t{0});
  run();
  EXPECT_FALSE(r->done);
  ask<uint64_t>(sys(), host, atoms::commit_atom_v, t1);
  run();
  ASSERT_TRUE(r->done);
  ASSERT_TRUE(r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->value, "new");
}

TEST_F(store_host_test, a_lock_wait_times_out_in_virtual_time) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto t2 = begin();
  auto r = ask<op_result>(sys(), host, req(t2, operation::add_or_update, "x", "2"),
                          uint32_t{100});
  advance(99ms);
  EXPECT_FALSE(r->done);
  advance(2ms);
  ASSERT_TRUE(r->done);
  EXPECT_EQ(to_errc(r->error), errc::lock_timeout);
  // The holder is unaffected.
  auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t1);
  run();
  EXPECT_TRUE(c->value);
}

TEST_F(store_host_test, an_earlier_deadline_fires_first_and_the_later_one_still_fires) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto t2 = begin();
  auto t3 = begin();
  auto slow =
      ask<op_result>(sys(), host, req(t2, operation::try_get, "x"), uint32_t{500});
  run();
  auto fast = ask<op_result>(sys(), host, req(t3, operation::try_get, "x"), uint32_t{50});
  advance(60ms);
  EXPECT_TRUE(fast->done);
  EXPECT_FALSE(slow->done);
  advance(450ms);
  EXPECT_TRUE(slow->done);
  EXPECT_EQ(to_errc(slow->error), errc::lock_timeout);
}

TEST_F(store_host_test, abort_answers_the_parked_operation_and_frees_the_lock) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto t2 = begin();
  auto parked =
      ask<op_result>(sys(), host, req(t2, operation::try_get, "x"), uint32_t{0});
  run();
  ask<bool>(sys(), host, atoms::abort_atom_v, t2);
  run();
  ASSERT_TRUE(parked->done);
  EXPECT_EQ(to_errc(parked->error), errc::transaction_finished);
  ask<bool>(sys(), host, atoms::abort_atom_v, t1);
  run();
  EXPECT_EQ(get("x"), std::nullopt);
}

TEST_F(store_host_test, a_failed_sync_stops_the_host) {
  auto t = begin();
  ask<op_result>(sys(), host, req(t, operation::add, "a", "1"), uint32_t{0});
  run();
  device->fail_syncs();
  auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t);
  run();
  ASSERT_TRUE(c->done);
  EXPECT_TRUE(c->error);
  auto b = ask<txn_id>(sys(), host, atoms::begin_atom_v);
  run();
  EXPECT_EQ(to_errc(b->error), errc::store_failed);
}

TEST_F(store_host_test, a_restarted_host_sees_durable_commits_only) {
  put("kept", "1");
  device->set_auto_sync(false);
  auto t = begin();
  ask<op_result>(sys(), host, req(t, operation::add, "lost", "2"), uint32_t{0});
  auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t);
  run();
  EXPECT_FALSE(c->done);
  caf::anon_send_exit(host, caf::exit_reason::kill);
  run();
  device->crash();
  device->set_auto_sync(true);
  host = start();
  EXPECT_EQ(get("kept"), "1");
  EXPECT_EQ(get("lost"), std::nullopt);
  put("after", "3");
  EXPECT_EQ(get("after"), "3");
}

TEST_F(store_host_test, a_checkpoint_truncates_the_device_and_restart_loads_it) {
  put("a", "1");
  put("b", "2");
  auto cp = ask<uint64_t>(sys(), host, atoms::checkpoint_atom_v);
  run();
  ASSERT_TRUE(cp->value) << caf::to_string(cp->error);
  EXPECT_EQ(device->record_count(), 0u);
  put("c", "3");
  caf::anon_send_exit(host, caf::exit_reason::kill);
  run();
  host = start();
  EXPECT_EQ(get("a"), "1");
  EXPECT_EQ(get("c"), "3");
}

TEST_F(store_host_test, bad_requests_get_typed_errors) {
  auto r =
      ask<op_result>(sys(), host, req(txn_id{999}, operation::try_get, "a"), uint32_t{0});
  auto c = ask<uint64_t>(sys(), host, atoms::commit_atom_v, txn_id{999});
  auto o = ask<bool>(sys(), host, atoms::open_atom_v, std::string{"d"},
                     collection_kind::queue, std::string{"k"}, std::string{"v"});
  run();
  EXPECT_EQ(to_errc(r->error), errc::unknown_transaction);
  EXPECT_TRUE(c->error);
  EXPECT_EQ(to_errc(o->error), errc::wrong_type);
}

// -- batches: a whole transaction in one message --

namespace {

op_batch batch_of(std::vector<op_request> ops, bool commit) {
  op_batch b;
  b.ops = std::move(ops);
  b.commit = commit;
  return b;
}

} // namespace

TEST_F(store_host_test, a_batch_commits_its_writes_and_answers_once_durable) {
  device->set_auto_sync(false);
  auto b = batch_of(
      {req({}, operation::add, "a", "1"), req({}, operation::add, "b", "2")}, true);
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  EXPECT_FALSE(r->done); // strong mode: waits for the sync
  device->release_syncs();
  run();
  ASSERT_TRUE(r->done && r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->results.size(), 2u);
  EXPECT_EQ(r->value->lsn, device->durable_lsn().value);
  device->set_auto_sync(true);
  EXPECT_EQ(get("a"), "1");
  EXPECT_EQ(get("b"), "2");
}

TEST_F(store_host_test, a_batch_with_a_failing_operation_writes_nothing) {
  put("b", "old");
  auto b = batch_of({req({}, operation::add_or_update, "a", "1"),
                     req({}, operation::add, "b", "2")}, // key_exists
                    true);
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  ASSERT_TRUE(r->done);
  EXPECT_EQ(to_errc(r->error), errc::key_exists);
  EXPECT_EQ(get("a"), std::nullopt);
  EXPECT_EQ(get("b"), "old");
  // Its transaction was aborted: its locks are free for the next writer.
  put("a", "3");
  EXPECT_EQ(get("a"), "3");
}

TEST_F(store_host_test, a_batch_whose_check_fails_runs_no_operation) {
  put("attempt", "2");
  auto b = batch_of({req({}, operation::add_or_update, "out", "late")}, true);
  b.checks.push_back(batch_check{"d", "attempt", check_kind::equals, "1"});
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  ASSERT_TRUE(r->done && r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->failed_check, 1u);
  EXPECT_EQ(r->value->lsn, 0u);
  EXPECT_EQ(get("out"), std::nullopt);
  b.checks[0].value = "2";
  auto ok = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  ASSERT_TRUE(ok->done && ok->value);
  EXPECT_EQ(ok->value->failed_check, 0u);
  EXPECT_EQ(get("out"), "late");
}

TEST_F(store_host_test, an_at_most_check_rejects_a_lower_fencing_token) {
  put("term", std::string{"\x00\x05", 2});
  auto b = batch_of({req({}, operation::add_or_update, "x", "deposed")}, true);
  b.checks.push_back(
      batch_check{"d", "term", check_kind::at_most, std::string{"\x00\x04", 2}});
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  ASSERT_TRUE(r->done && r->value);
  EXPECT_EQ(r->value->failed_check, 1u);
  EXPECT_EQ(get("x"), std::nullopt);
}

TEST_F(store_host_test, a_batch_waits_for_a_lock_and_continues_when_it_is_granted) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto b = batch_of({req({}, operation::try_get, "y"),
                     req({}, operation::add_or_update, "x", "2"),
                     req({}, operation::add_or_update, "z", "3")},
                    true);
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  EXPECT_FALSE(r->done);
  ask<uint64_t>(sys(), host, atoms::commit_atom_v, t1);
  run();
  ASSERT_TRUE(r->done && r->value) << caf::to_string(r->error);
  EXPECT_TRUE(r->value->results[1].found); // x existed (t1's write)
  EXPECT_EQ(get("x"), "2");
  EXPECT_EQ(get("z"), "3");
}

// A commit releases its locks, and a batch parked on one of them may commit
// at once, inside that commit: its record has the next lsn, so it must reach
// the device after the first one. (The host used to wake the parked batch
// before logging: the device got lsn N+1 before N, its appended mark went back
// to N, every sync from then on reported N, the host asked for sync after sync
// while N+1's answer waited for some later write, and a restart found the
// records out of order.)
TEST_F(store_host_test, a_batch_woken_by_a_commit_is_logged_after_it) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto b = batch_of({req({}, operation::add_or_update, "x", "2"),
                     req({}, operation::add_or_update, "z", "3")},
                    true);
  auto r = ask<batch_result>(sys(), host, b, uint32_t{0});
  run();
  EXPECT_FALSE(r->done); // parked on x
  // A sync in flight when t1 commits.
  device->set_auto_sync(false);
  auto t0 = begin();
  ask<op_result>(sys(), host, req(t0, operation::add, "w", "0"), uint32_t{0});
  auto c0 = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t0);
  run();
  EXPECT_EQ(device->held_syncs(), 1u);
  auto c1 = ask<uint64_t>(sys(), host, atoms::commit_atom_v, t1);
  run();
  device->set_auto_sync(true);
  device->release_syncs();
  sched().run(1000); // bounded: a sync loop must not hang the test
  ASSERT_TRUE(c0->done && c1->done);
  ASSERT_TRUE(r->done && r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->lsn, *c1->value + 1);
  EXPECT_EQ(device->durable_lsn().value, r->value->lsn);
  EXPECT_EQ(sched().run(1000), 0u); // quiet: no sync after sync
  auto rec = device->recover();
  ASSERT_TRUE(rec);
  for (size_t i = 1; i < rec.value().records.size(); ++i)
    EXPECT_LT(rec.value().records[i - 1].lsn, rec.value().records[i].lsn);
  caf::anon_send_exit(host, caf::exit_reason::kill);
  run();
  host = start();
  EXPECT_EQ(get("x"), "2");
  EXPECT_EQ(get("z"), "3");
  EXPECT_EQ(get("w"), "0");
}

TEST_F(store_host_test, a_batch_lock_wait_times_out_and_aborts_its_transaction) {
  auto t1 = begin();
  ask<op_result>(sys(), host, req(t1, operation::add_or_update, "x", "1"), uint32_t{0});
  run();
  auto b = batch_of(
      {req({}, operation::add_or_update, "w", "1"), req({}, operation::try_get, "x")},
      true);
  auto r = ask<batch_result>(sys(), host, b, uint32_t{100});
  advance(101ms);
  ASSERT_TRUE(r->done);
  EXPECT_EQ(to_errc(r->error), errc::lock_timeout);
  ask<uint64_t>(sys(), host, atoms::commit_atom_v, t1);
  run();
  EXPECT_EQ(get("w"), std::nullopt); // the batch's first write is gone too
  put("w", "free");                  // and its lock was released
  EXPECT_EQ(get("w"), "free");
}

TEST_F(store_host_test, batches_continue_one_transaction_until_one_commits) {
  auto first = ask<batch_result>(
      sys(), host, batch_of({req({}, operation::add, "a", "1")}, false), uint32_t{0});
  run();
  ASSERT_TRUE(first->value);
  auto t = first->value->txn;
  EXPECT_EQ(get("a"), std::nullopt); // not committed yet
  auto second = batch_of({req({}, operation::try_get, "a")}, true);
  second.txn = t;
  auto r = ask<batch_result>(sys(), host, second, uint32_t{0});
  run();
  ASSERT_TRUE(r->done && r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->results[0].value, "1"); // its own write
  EXPECT_EQ(get("a"), "1");
}

// truncate_after (used by the replica host): drops the records after the
// point, lowers the durable lsn, and a sync held across it reports no more
// than the point, so re-appended records are not taken for durable.
TEST(memory_log_device, truncate_after_drops_the_suffix_and_clamps_held_syncs) {
  memory_log_device d;
  auto rec = [](uint64_t l) {
    log_record r;
    r.lsn = lsn{l};
    r.txn = txn_id{l};
    return r;
  };
  for (uint64_t l = 1; l <= 3; ++l)
    ASSERT_TRUE(d.append(rec(l)));
  d.sync([](result<lsn>) {});
  ASSERT_EQ(d.durable_lsn(), lsn{3});
  d.set_auto_sync(false);
  ASSERT_TRUE(d.append(rec(4)));
  lsn reported;
  d.sync([&](result<lsn> r) { reported = r.value(); });
  ASSERT_TRUE(d.truncate_after(lsn{2}));
  EXPECT_EQ(d.durable_lsn(), lsn{2});
  EXPECT_EQ(d.record_count(), 2u);
  ASSERT_TRUE(d.append(rec(3)));
  d.release_syncs();
  EXPECT_EQ(reported, lsn{2});
  d.crash();
  auto r = d.recover();
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().records.size(), 2u);
}
