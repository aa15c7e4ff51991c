// Three replica hosts in one actor system on CAF's test coordinator, in
// virtual time: quorum commit against held device syncs, failover through the
// host's sync phase, a crashed secondary that lost its unsynced tail catching
// up, a secondary naming the primary, and bad peer input dropped and counted.
#include "actors/replication/replica_host.hpp"

#include "actors/replication/record_codec.hpp"
#include "tests/support/replica_set_fixture.hpp"

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::store::memory_log_device;
using conclave::testing::ask;

namespace {

class replica_host_test : public conclave::replication::testing::replica_set_fixture {};

TEST_F(replica_host_test, commit_is_acknowledged_once_a_majority_has_it_durable) {
  make_primary(2, 1);
  // One secondary's syncs held: the primary and the other secondary are a
  // majority.
  rs[1].device->set_auto_sync(false);
  auto a = put(2, "a", "1");
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  ASSERT_TRUE(a->value);
  EXPECT_EQ(a->value->code, errc::ok);
  // Both secondaries' syncs held: the primary alone is no majority.
  rs[0].device->set_auto_sync(false);
  auto b = put(2, "b", "2");
  advance(300ms);
  EXPECT_FALSE(b->done);
  EXPECT_EQ(status(2).commit, a->value->at);
  // A weak commit needs only the primary's own sync.
  auto w = put(2, "w", "3", commit_mode::weak);
  advance(10ms);
  ASSERT_TRUE(w->done && w->value);
  EXPECT_EQ(w->value->code, errc::ok);
  EXPECT_FALSE(b->done);
  // One secondary's sync completes: now a majority has b.
  rs[0].device->release_syncs();
  rs[0].device->set_auto_sync(true);
  ASSERT_TRUE(advance_until([&] { return b->done; }, 200ms));
  EXPECT_EQ(b->value->code, errc::ok);
  EXPECT_EQ(read(2, "b").value, "2");
}

TEST_F(replica_host_test, failover_to_a_higher_term_keeps_every_acknowledged_commit) {
  // Replica 0 is cut off while replica 2 commits with replica 1.
  set_links(0, false);
  make_primary(2, 1);
  std::vector<std::shared_ptr<conclave::testing::reply<txn_result>>> acks;
  for (int i = 0; i < 5; ++i)
    acks.push_back(put(2, "k" + std::to_string(i), "v" + std::to_string(i)));
  ASSERT_TRUE(advance_until([&] { return conclave::all_done(acks); }, 500ms));
  for (auto& a : acks)
    ASSERT_EQ(a->value->code, errc::ok);
  EXPECT_EQ(status(0).last, lsn{0}); // replica 0 holds none of it
  // The primary dies; replica 0 comes back and is elected at a higher term.
  crash(2);
  set_links(2, false);
  set_links(0, true);
  make_primary(0, 2);
  for (int i = 0; i < 5; ++i) {
    auto r = read(0, "k" + std::to_string(i));
    EXPECT_TRUE(r.found) << i;
    EXPECT_EQ(r.value, "v" + std::to_string(i));
  }
  auto c = put(0, "after", "x");
  ASSERT_TRUE(advance_until([&] { return c->done; }, 200ms));
  EXPECT_EQ(c->value->code, errc::ok);
  EXPECT_EQ(status(1).promised, (term{2, node_id{1}, 0}));
  ASSERT_TRUE(advance_until([&] { return read(1, "after").found; }, 200ms));
}

TEST_F(replica_host_test, crashed_secondary_loses_its_unsynced_tail_and_catches_up) {
  make_primary(2, 1);
  auto durable_before = rs[0].device->durable_lsn();
  rs[0].device->set_auto_sync(false);
  std::vector<std::shared_ptr<conclave::testing::reply<txn_result>>> acks;
  for (int i = 0; i < 3; ++i)
    acks.push_back(put(2, "k" + std::to_string(i), "v" + std::to_string(i)));
  ASSERT_TRUE(advance_until([&] { return acks.back()->done; }, 500ms));
  EXPECT_GT(rs[0].device->record_count(), durable_before.value); // appended, unsynced
  crash(0);
  EXPECT_EQ(rs[0].device->record_count(), durable_before.value); // the tail is gone
  rs[0].device->set_auto_sync(true);
  spawn(0);
  auto primary_commit = status(2).commit;
  ASSERT_TRUE(advance_until([&] { return status(0).applied >= primary_commit; }, 500ms));
  auto r = read(0, "k2");
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.value, "v2");
  EXPECT_EQ(r.behind, 0u);
  EXPECT_EQ(r.primary, rs[2].id);
  EXPECT_EQ(rs[0].device->durable_lsn(), status(2).last);
}

TEST_F(replica_host_test, deposed_primary_drops_its_uncommitted_suffix_from_its_device) {
  make_primary(2, 1);
  auto a = put(2, "a", "1");
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  // Replica 2 is cut off: its next transaction is durable only on itself.
  set_links(2, false);
  auto lost = put(2, "lost", "x");
  advance(50ms);
  ASSERT_FALSE(lost->done);
  EXPECT_GT(status(2).durable, a->value->at);
  make_primary(0, 2);
  auto b = put(0, "b", "2");
  ASSERT_TRUE(advance_until([&] { return b->done; }, 200ms));
  // Healed: the higher term deposes replica 2, whose log is cut back to the
  // new primary's.
  set_links(2, true);
  ASSERT_TRUE(advance_until([&] { return status(2).applied >= b->value->at; }, 500ms));
  ASSERT_TRUE(lost->done && lost->value);
  EXPECT_EQ(lost->value->code, errc::primary_changed);
  EXPECT_EQ(status(2).replica_role, role::secondary);
  EXPECT_FALSE(read(2, "lost").found);
  // Its device agrees: a restart recovers the new primary's log, not the suffix.
  crash(2);
  spawn(2);
  auto s = status(2);
  EXPECT_FALSE(s.failed);
  EXPECT_EQ(s.promised, (term{2, rs[0].id, 0}));
  ASSERT_TRUE(advance_until([&] { return read(2, "b").found; }, 500ms));
  EXPECT_FALSE(read(2, "lost").found);
}

TEST_F(replica_host_test, a_lagging_secondary_reads_say_how_far_behind_they_are) {
  // A small window: a secondary whose acknowledgements are lost gets a few
  // records, and heartbeats announcing the commit lsn of the other majority.
  config.max_inflight_bytes = 200;
  config.max_batch_records = 2;
  for (size_t i = 0; i < rs.size(); ++i) {
    caf::anon_send_exit(rs[i].host, caf::exit_reason::kill);
    run();
    spawn(i);
  }
  make_primary(2, 1);
  rs[0].transport->set_link(rs[2].id, false); // replica 0 -> primary lost
  std::vector<std::shared_ptr<conclave::testing::reply<txn_result>>> acks;
  for (int i = 0; i < 10; ++i)
    acks.push_back(put(2, "k" + std::to_string(i), std::string(40, 'v')));
  ASSERT_TRUE(advance_until([&] { return acks.back()->done; }, 500ms));
  advance(100ms); // heartbeats carry the commit lsn
  auto lagging = read(0, "k9");
  EXPECT_FALSE(lagging.found);
  EXPECT_GT(lagging.behind, 0u);
  EXPECT_EQ(lagging.applied.value + lagging.behind, status(2).commit.value);
  EXPECT_EQ(read(1, "k9").value, std::string(40, 'v'));
  // The primary's status reports the lag of each secondary (metrics read it)
  // and its finished sync phase.
  auto primary = status(2);
  EXPECT_EQ(primary.syncs, 1u);
  ASSERT_EQ(primary.lag.size(), 2u);
  for (auto& l : primary.lag) {
    if (l.peer == rs[0].id) {
      EXPECT_GT(l.records, 0u);
      EXPECT_GT(l.bytes, 0u);
      EXPECT_GT(l.behind_us, 0);
    } else {
      EXPECT_EQ(l.records, 0u);
      EXPECT_EQ(l.behind_us, 0);
    }
  }
  EXPECT_TRUE(status(0).lag.empty());            // a secondary reports none
  EXPECT_NE(status(0).digest, status(2).digest); // it applied fewer records
  rs[0].transport->set_link(rs[2].id, true);
  ASSERT_TRUE(advance_until([&] { return read(0, "k9").found; }, 500ms));
  EXPECT_EQ(read(0, "k9").behind, 0u);
  // Caught up: every replica applied the same records, so the digests agree.
  ASSERT_TRUE(
      advance_until([&] { return status(0).applied == status(2).applied; }, 500ms));
  EXPECT_NE(status(2).digest, 0u);
  EXPECT_EQ(status(0).digest, status(2).digest);
  EXPECT_EQ(status(1).digest, status(2).digest);
}

TEST_F(replica_host_test, transaction_sent_to_a_secondary_is_answered_with_the_primary) {
  make_primary(2, 1);
  auto r = put(0, "a", "1");
  run();
  ASSERT_TRUE(r->done && r->value);
  EXPECT_EQ(r->value->code, errc::not_primary);
  EXPECT_EQ(r->value->primary, rs[2].id);
  EXPECT_FALSE(read(0, "a").found);
}

TEST_F(replica_host_test, primary_told_of_another_leader_fails_its_pending_transactions) {
  make_primary(2, 1);
  rs[0].device->set_auto_sync(false);
  rs[1].device->set_auto_sync(false);
  auto p = put(2, "a", "1");
  advance(10ms);
  ASSERT_FALSE(p->done);
  auto down = ask<bool>(sys(), rs[2].host, leader_is_msg{term{2, rs[0].id, 0}});
  run();
  ASSERT_TRUE(down->value && *down->value);
  ASSERT_TRUE(p->done && p->value);
  EXPECT_EQ(p->value->code, errc::primary_changed);
  EXPECT_EQ(status(2).replica_role, role::secondary);
}

TEST_F(replica_host_test, bad_peer_messages_are_dropped_and_counted) {
  make_primary(2, 1);
  auto c = put(2, "a", "1");
  ASSERT_TRUE(advance_until([&] { return c->done; }, 200ms));
  auto before = status(0);
  auto t = before.promised;
  auto dropped = [&](drop_reason r) {
    return status(0).dropped[static_cast<size_t>(r)]
           - before.dropped[static_cast<size_t>(r)];
  };
  // A sender outside the membership.
  caf::anon_send(rs[0].host, append{node_id{9}, t, before.last, t, {}, before.commit});
  // A stale term.
  caf::anon_send(rs[0].host,
                 append{rs[2].id, term{0, rs[2].id, 0}, lsn{0}, term{}, {}, lsn{}});
  // A gap: a record at last+5 after prev = last.
  append gap{rs[2].id, t, before.last, t, {}, before.commit};
  gap.entries.push_back(entry{lsn{before.last.value + 5}, t, entry_kind::transaction,
                              encode_payload({txn_op{"d", "evil", "x", op_kind::put}})});
  caf::anon_send(rs[0].host, gap);
  // Not a replication message at all.
  caf::anon_send(rs[0].host, std::string{"garbage"});
  run();
  EXPECT_EQ(dropped(drop_reason::non_member), 1u);
  EXPECT_EQ(dropped(drop_reason::stale_term), 1u);
  EXPECT_EQ(dropped(drop_reason::lsn_gap), 1u);
  EXPECT_EQ(status(0).unknown_messages, before.unknown_messages + 1);
  EXPECT_EQ(status(0).last, before.last);
  advance(100ms);
  EXPECT_FALSE(read(0, "evil").found);
  EXPECT_FALSE(read(2, "evil").found);
}

// A sync completion already on its way when a truncation replaces the records
// it covered must not make the replacements durable: the secondary's device
// syncs at once (the completion is queued behind an append that truncates),
// and the host may report durable only what the device has.
TEST_F(replica_host_test,
       a_sync_completed_before_a_truncation_does_not_cover_the_new_records) {
  term t1{1, rs[2].id, 0};
  term t2{2, rs[1].id, 0};
  auto payload = encode_payload({txn_op{"d", "k", "v", op_kind::put}});
  append first{rs[2].id, t1, lsn{0}, term{}, {}, lsn{0}};
  for (uint64_t l = 1; l <= 3; ++l)
    first.entries.push_back(entry{lsn{l}, t1, entry_kind::transaction, payload});
  // A later primary keeps lsn 1 and replaces 2 and 3.
  append second{rs[1].id, t2, lsn{1}, t1, {}, lsn{0}};
  for (uint64_t l = 2; l <= 3; ++l)
    second.entries.push_back(entry{lsn{l}, t2, entry_kind::transaction, payload});
  // Both queued before replica 0 runs: its sync of 1..3 completes while it
  // handles the first, and that completion is handled after the second.
  caf::anon_send(rs[0].host, first);
  caf::anon_send(rs[0].host, second);
  run();
  auto s = status(0);
  EXPECT_EQ(s.last, lsn{3});
  EXPECT_LE(s.durable, rs[0].device->durable_lsn());
  EXPECT_EQ(s.durable, lsn{3}); // a new sync made the replacements durable
}

// -- queues, conditions, lists, bad requests ---------------------------------------

txn_request one(op_kind k, std::string c, std::string key, std::string v = {}) {
  return txn_request{{txn_op{std::move(c), std::move(key), std::move(v), k}}, {}};
}

TEST_F(replica_host_test, queue_items_leave_in_order_one_dequeue_each) {
  make_primary(2, 1);
  for (auto item : {"a", "b", "c"})
    ASSERT_EQ(txn_wait(2, one(op_kind::enqueue, "q", "", item)).code, errc::ok);
  for (auto item : {"a", "b", "c"}) {
    auto r = txn_wait(2, one(op_kind::dequeue, "q", ""));
    ASSERT_EQ(r.code, errc::ok);
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_TRUE(r.outputs[0].found);
    EXPECT_EQ(r.outputs[0].value, item);
  }
  auto empty = txn_wait(2, one(op_kind::dequeue, "q", ""));
  EXPECT_EQ(empty.code, errc::ok);
  ASSERT_EQ(empty.outputs.size(), 1u);
  EXPECT_FALSE(empty.outputs[0].found);
  // The secondaries applied the same records: after a failover the queue is
  // as empty there; a new item is the next one out.
  ASSERT_EQ(txn_wait(2, one(op_kind::enqueue, "q", "", "d")).code, errc::ok);
  crash(2);
  make_primary(0, 2);
  auto d = txn_wait(0, one(op_kind::dequeue, "q", ""));
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].value, "d");
  EXPECT_FALSE(txn_wait(0, one(op_kind::dequeue, "q", "")).outputs.at(0).found);
}

TEST_F(replica_host_test, a_dequeue_from_an_unknown_queue_changes_nothing) {
  make_primary(2, 1);
  txn_request req;
  req.ops.push_back(txn_op{"d", "k", "v", op_kind::put});
  req.ops.push_back(txn_op{"nosuch", "", "", op_kind::dequeue});
  auto r = txn_wait(2, req);
  EXPECT_EQ(r.code, errc::unknown_collection);
  EXPECT_GT(r.at, lsn{0}); // committed, as a record that changed nothing
  EXPECT_FALSE(read(2, "k").found);
  EXPECT_EQ(status(2).txns_refused, 1u);
  // Nothing was created either: a queue op on "d" is no kind error.
  EXPECT_EQ(txn_wait(2, one(op_kind::enqueue, "d", "", "x")).code, errc::ok);
}

TEST_F(replica_host_test, a_queue_and_a_dictionary_are_not_mixed_up) {
  make_primary(2, 1);
  ASSERT_EQ(txn_wait(2, one(op_kind::put, "d", "k", "v")).code, errc::ok);
  ASSERT_EQ(txn_wait(2, one(op_kind::enqueue, "q", "", "x")).code, errc::ok);
  EXPECT_EQ(txn_wait(2, one(op_kind::enqueue, "d", "", "x")).code, errc::wrong_kind);
  EXPECT_EQ(txn_wait(2, one(op_kind::dequeue, "d", "")).code, errc::wrong_kind);
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "q", "k", "v")).code, errc::wrong_kind);
  EXPECT_EQ(txn_wait(2, one(op_kind::expect_absent, "q", "k")).code, errc::wrong_kind);
  auto rr = ask<read_result>(sys(), rs[2].host, read_request{"q", "k"});
  run();
  EXPECT_EQ(rr->value->code, errc::wrong_kind);
  EXPECT_EQ(list(2, list_request{"q", "", "", 0}).code, errc::wrong_kind);
  // The queue still holds its one item.
  auto d = txn_wait(2, one(op_kind::dequeue, "q", ""));
  EXPECT_EQ(d.outputs.at(0).value, "x");
}

TEST_F(replica_host_test, compare_and_set_commits_only_when_its_condition_holds) {
  make_primary(2, 1);
  auto cas = [](std::optional<std::string> expected, std::string desired) {
    txn_request req;
    if (expected)
      req.ops.push_back(txn_op{"d", "k", *expected, op_kind::expect_value});
    else
      req.ops.push_back(txn_op{"d", "k", "", op_kind::expect_absent});
    req.ops.push_back(txn_op{"d", "k", std::move(desired), op_kind::put});
    return req;
  };
  auto first = txn_wait(2, cas(std::nullopt, "1"));
  ASSERT_EQ(first.code, errc::ok);
  ASSERT_EQ(first.outputs.size(), 2u);
  EXPECT_TRUE(first.outputs[0].found); // the condition held
  // The same again fails and reports the current value.
  auto again = txn_wait(2, cas(std::nullopt, "2"));
  EXPECT_EQ(again.code, errc::condition_failed);
  ASSERT_EQ(again.outputs.size(), 1u);
  EXPECT_FALSE(again.outputs[0].found);
  EXPECT_EQ(again.outputs[0].value, "1");
  EXPECT_EQ(txn_wait(2, cas(std::string{"0"}, "2")).code, errc::condition_failed);
  EXPECT_EQ(read(2, "k").value, "1");
  EXPECT_EQ(txn_wait(2, cas(std::string{"1"}, "2")).code, errc::ok);
  EXPECT_EQ(read(2, "k").value, "2");
  // A condition sees the transaction's own earlier writes.
  txn_request own;
  own.ops.push_back(txn_op{"d", "n", "x", op_kind::put});
  own.ops.push_back(txn_op{"d", "n", "x", op_kind::expect_value});
  EXPECT_EQ(txn_wait(2, own).code, errc::ok);
  // Every replica applied the same outcomes.
  ASSERT_TRUE(advance_until([&] { return read(0, "k").value == "2"; }, 200ms));
  EXPECT_EQ(status(0).txns_refused, 2u);
}

TEST_F(replica_host_test, bad_requests_are_refused_before_anything_is_proposed) {
  limits.max_value_bytes = 64;
  limits.max_key_bytes = 16;
  restart_all();
  make_primary(2, 1);
  auto last = status(2).last;
  EXPECT_EQ(txn_wait(2, txn_request{}).code, errc::bad_request); // no ops
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "d", "", "v")).code, errc::bad_request);
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "", "k", "v")).code, errc::bad_request);
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "d", "k", std::string(65, 'v'))).code,
            errc::too_large);
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "d", std::string(17, 'k'), "v")).code,
            errc::too_large);
  EXPECT_EQ(txn_wait(2, one(op_kind::enqueue, "q", "", std::string(65, 'v'))).code,
            errc::too_large);
  auto weak_dequeue = one(op_kind::dequeue, "q", "");
  weak_dequeue.mode = commit_mode::weak;
  EXPECT_EQ(txn_wait(2, weak_dequeue).code, errc::bad_request);
  auto unknown_kind = one(op_kind::put, "d", "k", "v");
  unknown_kind.ops[0].kind = static_cast<op_kind>(9);
  EXPECT_EQ(txn_wait(2, unknown_kind).code, errc::bad_request);
  // Refused on a secondary too, before it names the primary.
  EXPECT_EQ(txn_wait(0, one(op_kind::put, "d", "", "v")).code, errc::bad_request);
  advance(50ms);
  EXPECT_EQ(status(2).last, last); // nothing reached the log
  EXPECT_EQ(status(2).txns_refused, 0u);
  // A value at the limit is fine.
  EXPECT_EQ(txn_wait(2, one(op_kind::put, "d", "k", std::string(64, 'v'))).code,
            errc::ok);
}

TEST_F(replica_host_test, list_by_prefix_is_bounded_and_pages_in_key_order) {
  max_list_items = 3;
  restart_all();
  make_primary(2, 1);
  txn_request req;
  for (auto k : {"a/5", "a/1", "a/3", "a/2", "a/4", "a", "b/1", "a0"})
    req.ops.push_back(txn_op{"d", k, std::string("v") + k, op_kind::put});
  req.ops.push_back(txn_op{"d", "a/3", "", op_kind::remove});
  ASSERT_EQ(txn_wait(2, req).code, errc::ok);
  auto keys = [](const list_result& r) {
    std::vector<std::string> out;
    for (auto& i : r.items)
      out.push_back(i.key);
    return out;
  };
  auto p1 = list(2, list_request{"d", "a/", "", 2});
  EXPECT_EQ(keys(p1), (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_TRUE(p1.more);
  EXPECT_EQ(p1.items[0].value, "va/1");
  EXPECT_EQ(p1.replica_role, role::primary);
  auto p2 = list(2, list_request{"d", "a/", "a/2", 2});
  EXPECT_EQ(keys(p2), (std::vector<std::string>{"a/4", "a/5"}));
  auto p3 = list(2, list_request{"d", "a/", "a/5", 2});
  EXPECT_TRUE(p3.items.empty());
  EXPECT_FALSE(p3.more);
  // The host's bound caps a larger limit (and limit 0).
  auto all = list(2, list_request{"d", "", "", 100});
  EXPECT_EQ(all.items.size(), 3u);
  EXPECT_TRUE(all.more);
  EXPECT_EQ(keys(all), (std::vector<std::string>{"a", "a/1", "a/2"}));
  EXPECT_EQ(list(2, list_request{"d", "", "", 0}).items.size(), 3u);
  // A prefix of 0xff bytes has no upper bound; an unknown dictionary is empty.
  ASSERT_EQ(txn_wait(2, one(op_kind::put, "d", "\xff\xff", "x")).code, errc::ok);
  EXPECT_EQ(keys(list(2, list_request{"d", "\xff", "", 0})),
            (std::vector<std::string>{"\xff\xff"}));
  auto none = list(2, list_request{"nosuch", "", "", 0});
  EXPECT_EQ(none.code, errc::ok);
  EXPECT_TRUE(none.items.empty());
  // A secondary lists its applied state and says how far behind it is.
  ASSERT_TRUE(advance_until(
      [&] {
        return list(0, list_request{"d", "b/", "", 0}).items.size() == 1;
      },
      200ms));
  advance(50ms); // heartbeats announce the primary's commit lsn
  auto sec = list(0, list_request{"d", "b/", "", 0});
  EXPECT_EQ(sec.replica_role, role::secondary);
  EXPECT_EQ(sec.primary, rs[2].id);
  EXPECT_EQ(sec.applied.value + sec.behind, status(2).commit.value);
}

} // namespace

TEST_F(replica_host_test,
       overwritten_and_removed_keys_read_right_across_garbage_collections) {
  make_primary(2, 1);
  // More old versions than the least garbage worth a collection (1,024):
  // overwrites of one key, and a key put and removed again and again.
  std::vector<std::shared_ptr<conclave::testing::reply<txn_result>>> replies;
  for (int i = 0; i < 1500; ++i) {
    replies.push_back(put(2, "k", std::to_string(i)));
    replies.push_back(put(2, "gone", "x"));
    replies.push_back(txn(2, one(op_kind::remove, "d", "gone")));
  }
  ASSERT_TRUE(advance_until([&] { return conclave::all_done(replies); }, 5s));
  for (auto& r : replies)
    ASSERT_EQ(r->value->code, errc::ok);
  advance(100ms); // the secondaries learn the last commit
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(read(i, "k").value, "1499") << "replica " << i;
    EXPECT_FALSE(read(i, "gone").found) << "replica " << i;
    EXPECT_EQ(status(i).digest, status(2).digest) << "replica " << i;
  }
}

TEST_F(replica_host_test, a_failed_sync_tells_the_node_once_what_failed) {
  // The node leaves the group when its replica's storage fails (a leader
  // whose replica refuses every write must not keep leading).
  std::vector<std::string> told;
  failure_hooks.resize(3);
  failure_hooks[1] = [&](const std::string& what) { told.push_back(what); };
  restart_all();
  make_primary(1, 1);
  auto a = put(1, "a", "1");
  ASSERT_TRUE(advance_until([&] { return a->done; }, 200ms));
  EXPECT_TRUE(told.empty());
  rs[1].device->fail_syncs();
  auto b = put(1, "b", "2");
  ASSERT_TRUE(advance_until([&] { return b->done; }, 200ms));
  EXPECT_EQ(b->value->code, errc::primary_changed);
  auto c = put(1, "c", "3");
  advance(100ms);
  EXPECT_TRUE(status(1).failed);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("sync"), std::string::npos) << told[0];
}
