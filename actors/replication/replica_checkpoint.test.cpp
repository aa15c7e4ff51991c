// Checkpoints and checkpoint streaming of the replica host, three hosts on
// CAF's test coordinator in virtual time over memory devices whose
// checkpoints and installs are durable only once a later sync completes: a
// secondary that was down while the primary checkpointed past it catches up
// by a streamed checkpoint (same digest), a restart recovers checkpoint + log,
// a crash before a checkpoint is durable loses nothing, a crash during an
// install leaves the old state or the new, a syncing primary behind a
// checkpoint gets it streamed, and bad chunks are dropped and counted.
#include "actors/replication/checkpoint_image.hpp"
#include "tests/support/replica_set_fixture.hpp"

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::testing::ask;

namespace {

class replica_checkpoint_test
    : public conclave::replication::testing::replica_set_fixture {
protected:
  /// Puts key i = "v<i>" for i in [from, to) on replica p, each acknowledged.
  void put_range(size_t p, int from, int to) {
    for (int i = from; i < to; ++i) {
      auto r = put(p, "k" + std::to_string(i), "v" + std::to_string(i));
      ASSERT_TRUE(advance_until([&] { return r->done; }, 500ms)) << i;
      ASSERT_TRUE(r->value);
      ASSERT_EQ(r->value->code, errc::ok) << i;
    }
  }

  /// Asks replica i for a checkpoint; its lsn (0: none written).
  uint64_t checkpoint(size_t i) {
    auto r =
        ask<uint64_t>(sys(), rs[i].host, conclave::replication_atoms::checkpoint_atom_v);
    run();
    EXPECT_TRUE(r->done && r->value);
    return r->value ? *r->value : 0;
  }

  /// Every replica has applied what the primary p committed.
  bool converged(size_t p) {
    auto ps = status(p);
    for (size_t i = 0; i < rs.size(); ++i) {
      auto s = status(i);
      if (s.applied != ps.commit || s.digest != ps.digest)
        return false;
    }
    return true;
  }

  void expect_values(size_t i, int from, int to) {
    for (int k = from; k < to; ++k) {
      auto r = read(i, "k" + std::to_string(k));
      EXPECT_TRUE(r.found) << "replica " << i << " key " << k;
      EXPECT_EQ(r.value, "v" + std::to_string(k));
    }
  }
};

TEST_F(replica_checkpoint_test,
       a_secondary_down_while_the_primary_checkpoints_past_it_catches_up_by_snapshot) {
  snapshot_chunk_bytes = 100; // several chunks per checkpoint
  restart_all();
  make_primary(0, 1);
  put_range(0, 0, 5);
  crash(2);
  put_range(0, 5, 30);
  auto at = checkpoint(0);
  ASSERT_GT(at, 5u);
  EXPECT_EQ(status(0).checkpoint_lsn.value, at);
  EXPECT_EQ(rs[0].device->checkpoint_lsn().value, at); // durable after its sync
  spawn(2);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 2s));
  auto s2 = status(2);
  EXPECT_EQ(s2.snapshots_installed, 1u);
  EXPECT_EQ(s2.checkpoint_lsn.value, at);
  EXPECT_EQ(rs[2].device->checkpoint_lsn().value, at);
  EXPECT_GE(status(0).snapshots_sent, 1u);
  EXPECT_GT(status(0).snapshot_chunks_sent, status(0).snapshots_sent);
  expect_values(2, 0, 30);
  // Replication goes on after the checkpoint's lsn.
  put_range(0, 30, 35);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  expect_values(2, 30, 35);
}

TEST_F(replica_checkpoint_test,
       a_restarted_set_recovers_from_checkpoint_and_log_after_it) {
  checkpoint_every_records = 8;
  restart_all();
  make_primary(0, 1);
  put_range(0, 0, 25);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_GE(status(i).checkpoints_written, 2u) << i;
    EXPECT_GT(rs[i].device->checkpoint_lsn().value, 0u) << i;
  }
  auto before = status(1);
  restart_all(); // every host restarts from its device
  auto after = status(1);
  EXPECT_EQ(after.checkpoint_lsn, before.checkpoint_lsn);
  EXPECT_GE(after.applied, before.checkpoint_lsn);
  make_primary(1, 2);
  put_range(1, 25, 27);
  ASSERT_TRUE(advance_until([&] { return converged(1); }, 1s));
  for (size_t i = 0; i < rs.size(); ++i)
    expect_values(i, 0, 27);
}

TEST_F(replica_checkpoint_test, a_crash_before_a_checkpoint_is_durable_loses_nothing) {
  make_primary(0, 1);
  put_range(0, 0, 10);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  // The checkpoint is written but its sync never completes.
  rs[0].device->set_auto_sync(false);
  auto at = checkpoint(0);
  ASSERT_GT(at, 0u);
  EXPECT_TRUE(rs[0].device->checkpoint_pending());
  crash(0);
  EXPECT_EQ(rs[0].device->checkpoint_lsn().value, 0u); // the old state: no checkpoint
  EXPECT_GE(rs[0].device->record_count(), at);         // and the whole log
  rs[0].device->set_auto_sync(true);
  spawn(0);
  make_primary(0, 2);
  expect_values(0, 0, 10);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
}

TEST_F(replica_checkpoint_test,
       a_snapshot_install_cut_by_a_crash_leaves_the_old_state_or_the_new) {
  make_primary(0, 1);
  put_range(0, 0, 5);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  crash(2);
  auto old_records = rs[2].device->record_count();
  put_range(0, 5, 30);
  auto at = checkpoint(0);
  ASSERT_GT(at, old_records);
  // Replica 2 comes back; its device completes no sync: the install is not
  // durable when it crashes.
  rs[2].device->set_auto_sync(false);
  spawn(2);
  ASSERT_TRUE(advance_until([&] { return status(2).snapshots_installed == 1; }, 2s));
  EXPECT_TRUE(rs[2].device->checkpoint_pending());
  crash(2);
  // The old state, whole: no checkpoint, the records it had.
  EXPECT_EQ(rs[2].device->checkpoint_lsn().value, 0u);
  EXPECT_EQ(rs[2].device->record_count(), old_records);
  auto rec = rs[2].device->recover();
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec.value().checkpoint.empty());
  EXPECT_EQ(rec.value().records.size(), old_records);
  // Again, with syncs: the new state, durable.
  rs[2].device->set_auto_sync(true);
  spawn(2);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 2s));
  EXPECT_EQ(rs[2].device->checkpoint_lsn().value, at);
  EXPECT_FALSE(rs[2].device->checkpoint_pending());
  crash(2);
  spawn(2);
  auto s2 = status(2);
  EXPECT_EQ(s2.checkpoint_lsn.value, at);
  EXPECT_GE(s2.applied.value, at);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 2s));
  expect_values(2, 0, 30);
}

TEST_F(replica_checkpoint_test, a_syncing_primary_behind_a_checkpoint_gets_it_streamed) {
  // Replica 1 is cut off while 0 and 2 commit and checkpoint.
  set_links(1, false);
  make_primary(0, 1);
  put_range(0, 0, 20);
  ASSERT_TRUE(advance_until([&] { return status(2).applied == status(0).commit; }, 1s));
  ASSERT_GT(checkpoint(0), 0u);
  ASSERT_GT(checkpoint(2), 0u);
  crash(0);
  set_links(1, true);
  // Replica 1 leads next: its sync phase chooses 2's log, which starts
  // after a checkpoint past 1's position: the checkpoint is streamed.
  make_primary(1, 2);
  EXPECT_EQ(status(1).snapshots_installed, 1u);
  EXPECT_GE(status(2).snapshots_sent, 1u);
  expect_values(1, 0, 20);
  spawn(0);
  put_range(1, 20, 22);
  ASSERT_TRUE(advance_until([&] { return converged(1); }, 2s));
}

TEST_F(replica_checkpoint_test,
       bad_snapshot_chunks_are_dropped_and_counted_never_installed) {
  make_primary(0, 1);
  put_range(0, 0, 3);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  auto before = status(1);
  auto t = before.promised;
  conclave::store::store_core empty{limits};
  auto image = encode_checkpoint_image({lsn{100}, t, 7, empty.encode_checkpoint()});
  std::vector<snapshot_chunk> bad;
  // From a non-member.
  bad.push_back({node_id{9}, t, lsn{100}, t, 1, 0, 1, image});
  // Under a term lower than promised.
  bad.push_back({node_id{1}, term{0, node_id{1}, 0}, lsn{100}, t, 2, 0, 1, image});
  // Out of order: the second piece of a stream never started.
  bad.push_back({node_id{1}, t, lsn{100}, t, 3, 1, 2, image});
  // Garbage: does not check out.
  bad.push_back({node_id{1}, t, lsn{100}, t, 4, 0, 1, "not a checkpoint at all"});
  // A flipped byte in a real image.
  auto flipped = image;
  flipped[flipped.size() / 2] ^= 1;
  bad.push_back({node_id{1}, t, lsn{100}, t, 5, 0, 1, flipped});
  // A real image announced at another lsn.
  bad.push_back({node_id{1}, t, lsn{101}, t, 6, 0, 1, image});
  for (auto& c : bad) {
    caf::anon_send(rs[1].host, c);
    run();
  }
  auto after = status(1);
  EXPECT_EQ(after.snapshot_chunks_dropped, bad.size());
  EXPECT_EQ(after.snapshots_installed, 0u);
  EXPECT_EQ(after.applied, before.applied);
  EXPECT_EQ(after.digest, before.digest);
  EXPECT_EQ(rs[1].device->checkpoint_lsn().value, 0u);
  expect_values(1, 0, 3);
}

} // namespace

// A primary of an older term that streams a checkpoint (and so sends no
// appends) to a replica that promised a newer term learns that term from the
// replica and steps down; the stream alone once kept it primary for ever.
TEST_F(replica_checkpoint_test, a_stale_stream_tells_its_primary_the_newer_term) {
  make_primary(0, 1);
  put_range(0, 0, 3);
  ASSERT_TRUE(advance_until([&] { return converged(0); }, 1s));
  set_links(0, false);
  make_primary(1, 2);
  ASSERT_EQ(status(2).promised.epoch, 2u);
  ASSERT_EQ(status(0).promised.epoch, 1u);
  // Only replica 2 reaches the old primary, and a secondary sends nothing of
  // its own accord: an answer to the stream is the only way the term gets there.
  rs[2].transport->set_link(rs[0].id, true);
  auto old_term = status(0).promised;
  conclave::store::store_core empty{limits};
  auto image = encode_checkpoint_image({lsn{3}, old_term, 7, empty.encode_checkpoint()});
  caf::anon_send(rs[2].host,
                 snapshot_chunk{rs[0].id, old_term, lsn{3}, old_term, 1, 0, 1, image});
  run();
  ASSERT_TRUE(advance_until([&] { return status(0).promised.epoch == 2; }, 200ms))
      << "the old primary never heard of the newer term";
  EXPECT_EQ(status(0).replica_role, role::secondary);
  EXPECT_EQ(status(2).snapshots_installed, 0u);
}
