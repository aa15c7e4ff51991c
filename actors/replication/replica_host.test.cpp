// Three replica hosts in one actor system on CAF's test coordinator, in
// virtual time: quorum commit against held device syncs, failover through the
// host's sync phase, a crashed secondary that lost its unsynced tail catching
// up, a secondary naming the primary, and bad peer input dropped and counted.
#include "actors/replication/replica_host.hpp"

#include "actors/replication/record_codec.hpp"
#include "actors/store/memory_log_device.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::store::memory_log_device;
using conclave::testing::ask;

namespace {

class replica_host_test : public conclave::testing::coordinator_fixture {
protected:
  struct replica {
    node_id id;
    std::shared_ptr<memory_log_device> device;
    std::shared_ptr<memory_term_file> terms;
    std::shared_ptr<actor_transport> transport;
    caf::actor host;
  };

  void configure(caf::actor_system_config& cfg) override {
    cfg.add_message_types<caf::id_block::conclave_replication>();
  }

  void SetUp() override {
    coordinator_fixture::SetUp();
    for (uint64_t i = 1; i <= 3; ++i) {
      replica r;
      r.id = node_id{i};
      r.device = std::make_shared<memory_log_device>();
      r.terms = std::make_shared<memory_term_file>();
      r.transport = std::make_shared<actor_transport>();
      rs.push_back(r);
    }
    for (size_t i = 0; i < rs.size(); ++i)
      spawn(i);
  }

  std::vector<node_id> members() const {
    std::vector<node_id> out;
    for (auto& r : rs)
      out.push_back(r.id);
    return out;
  }

  /// (Re)starts replica i on its device and term file; the peers learn the
  /// new handle.
  void spawn(size_t i) {
    replica_host_options o;
    o.self = rs[i].id;
    o.members = members();
    o.device = rs[i].device;
    o.terms = rs[i].terms;
    o.transport = rs[i].transport;
    o.config = config;
    rs[i].host = track(spawn_replica_host(sys(), o));
    for (auto& r : rs)
      r.transport->set_peer(rs[i].id, rs[i].host);
  }

  /// Kills replica i's actor and crashes its device (unsynced records lost).
  void crash(size_t i) {
    caf::anon_send_exit(rs[i].host, caf::exit_reason::kill);
    run();
    rs[i].device->crash();
  }

  /// Cuts (or heals) every link to and from replica i.
  void set_links(size_t i, bool up) {
    for (size_t j = 0; j < rs.size(); ++j) {
      if (j == i)
        continue;
      rs[j].transport->set_link(rs[i].id, up);
      rs[i].transport->set_link(rs[j].id, up);
    }
  }

  replica_status status(size_t i) {
    auto s = ask<replica_status>(sys(), rs[i].host,
                                 conclave::replication_atoms::status_atom_v);
    run();
    EXPECT_TRUE(s->done && s->value);
    return s->value ? *s->value : replica_status{};
  }

  /// Makes replica i primary at epoch e and waits until it serves.
  void make_primary(size_t i, uint64_t epoch) {
    auto ok = ask<bool>(sys(), rs[i].host, become_primary_msg{term{epoch, rs[i].id, 0}});
    run();
    ASSERT_TRUE(ok->value && *ok->value);
    ASSERT_TRUE(advance_until([&] { return status(i).serving; }, 500ms));
  }

  std::shared_ptr<conclave::testing::reply<txn_result>>
  put(size_t i, const std::string& k, const std::string& v,
      commit_mode mode = commit_mode::strong) {
    txn_request req;
    req.ops.push_back(write_op{"d", k, v, false});
    req.mode = mode;
    return ask<txn_result>(sys(), rs[i].host, req);
  }

  read_result read(size_t i, const std::string& k) {
    auto r = ask<read_result>(sys(), rs[i].host, read_request{"d", k});
    run();
    EXPECT_TRUE(r->done && r->value);
    return r->value ? *r->value : read_result{};
  }

  std::vector<replica> rs;
  replica_config config;
};

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
  ASSERT_TRUE(advance_until(
      [&] {
        for (auto& a : acks)
          if (!a->done)
            return false;
        return true;
      },
      500ms));
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
                              encode_payload({write_op{"d", "evil", "x", false}})});
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

} // namespace
