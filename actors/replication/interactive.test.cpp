// Interactive transactions: the commit request a transaction builds (pure),
// and the guarantee against three replica hosts on a real scheduler: a lost
// update and write skew are refused as conflicts, reads are repeatable and
// see the transaction's own writes, run_transaction re-runs after a conflict
// and never after anything else, and concurrent increments from several
// threads lose nothing.
#include "actors/replication/interactive.hpp"

#include "tests/support/real_replica_set.hpp"

#include <caf/actor_system_config.hpp>

#include <atomic>
#include <cstdio>
#include <thread>

using namespace conclave::replication;

namespace {

// -- the commit request ------------------------------------------------------------

TEST(txn_buffer, commit_checks_every_first_read_then_writes_in_order) {
  txn_buffer b;
  b.record_read("d", "b", std::string{"2"});
  b.record_read("d", "a", std::nullopt);
  b.record_read("d", "b", std::string{"changed"}); // the first read is kept
  b.put("d", "c", "3");
  b.enqueue("q", "item");
  b.remove("d", "b");
  auto req = b.commit_request();
  EXPECT_EQ(req.mode, commit_mode::strong);
  ASSERT_EQ(req.ops.size(), 5u);
  EXPECT_EQ(req.ops[0].kind, op_kind::expect_absent);
  EXPECT_EQ(req.ops[0].key, "a");
  EXPECT_EQ(req.ops[1].kind, op_kind::expect_value);
  EXPECT_EQ(req.ops[1].key, "b");
  EXPECT_EQ(req.ops[1].value, "2");
  EXPECT_EQ(req.ops[2].kind, op_kind::put);
  EXPECT_EQ(req.ops[2].key, "c");
  EXPECT_EQ(req.ops[3].kind, op_kind::enqueue);
  EXPECT_EQ(req.ops[3].collection, "q");
  EXPECT_EQ(req.ops[4].kind, op_kind::remove);
  EXPECT_EQ(req.ops[4].key, "b");
}

TEST(txn_buffer, local_view_is_own_last_write_then_first_read) {
  txn_buffer b;
  EXPECT_FALSE(b.local("d", "k"));
  b.record_read("d", "k", std::string{"old"});
  EXPECT_EQ(**b.local("d", "k"), "old");
  b.put("d", "k", "new");
  EXPECT_EQ(**b.local("d", "k"), "new");
  b.remove("d", "k");
  ASSERT_TRUE(b.local("d", "k"));
  EXPECT_FALSE(b.local("d", "k")->has_value());
  // Same key name, other collection: separate.
  EXPECT_FALSE(b.local("e", "k"));
  // A write without a read adds no condition (blind write).
  txn_buffer w;
  w.put("d", "x", "1");
  EXPECT_EQ(w.commit_request().ops.size(), 1u);
}

// -- against a replica set ---------------------------------------------------------

class interactive_test : public ::testing::Test {
protected:
  struct config : caf::actor_system_config {
    config() {
      add_message_types<caf::id_block::conclave_replication>();
      set("logger.file-verbosity", caf::atom("quiet"));
    }
  };
  config cfg;
  caf::actor_system sys{cfg};
  conclave::replication::testing::real_replica_set set{sys};
};

TEST_F(interactive_test, read_modify_write_of_a_stale_read_is_a_conflict) {
  ASSERT_TRUE(set.primary_up);
  kv_client kv{sys, set.options()};
  ASSERT_EQ(kv.put("d", "counter", "0").code, errc::ok);
  interactive_txn t1{kv};
  interactive_txn t2{kv};
  EXPECT_EQ(t1.get("d", "counter").value, "0");
  EXPECT_EQ(t2.get("d", "counter").value, "0");
  t1.put("d", "counter", "1");
  t2.put("d", "counter", "1");
  EXPECT_EQ(t1.commit().code, errc::ok);
  // t2 read 0, which is gone: committing 1 would lose t1's increment.
  EXPECT_EQ(t2.commit().code, errc::condition_failed);
  EXPECT_EQ(kv.get("d", "counter").value, "1");
}

TEST_F(interactive_test, write_skew_is_refused) {
  ASSERT_TRUE(set.primary_up);
  kv_client kv{sys, set.options()};
  // Two doctors on call; each may go off call if the other stays.
  ASSERT_EQ(kv.put("d", "alice", "on").code, errc::ok);
  ASSERT_EQ(kv.put("d", "bob", "on").code, errc::ok);
  interactive_txn a{kv};
  interactive_txn b{kv};
  for (auto* t : {&a, &b}) {
    EXPECT_EQ(t->get("d", "alice").value, "on");
    EXPECT_EQ(t->get("d", "bob").value, "on");
  }
  a.put("d", "alice", "off");
  b.put("d", "bob", "off");
  EXPECT_EQ(a.commit().code, errc::ok);
  // b wrote only bob, but read alice: snapshot isolation would let both
  // commit and leave nobody on call.
  EXPECT_EQ(b.commit().code, errc::condition_failed);
  EXPECT_EQ(kv.get("d", "bob").value, "on");
}

TEST_F(interactive_test,
       reads_repeat_and_see_own_writes_and_a_read_only_commit_checks_them) {
  ASSERT_TRUE(set.primary_up);
  kv_client kv{sys, set.options()};
  ASSERT_EQ(kv.put("d", "a", "x").code, errc::ok);
  interactive_txn t{kv};
  EXPECT_EQ(t.get("d", "a").value, "x");
  ASSERT_EQ(kv.put("d", "a", "y").code, errc::ok); // another client
  EXPECT_EQ(t.get("d", "a").value, "x");           // repeatable
  EXPECT_FALSE(t.get("d", "missing").found);
  t.put("d", "mine", "1");
  EXPECT_EQ(t.get("d", "mine").value, "1");
  t.remove("d", "mine");
  EXPECT_FALSE(t.get("d", "mine").found);
  // "a" changed after it was read: even a transaction that only read it
  // fails, and its own writes are not applied.
  t.put("d", "other", "1");
  EXPECT_EQ(t.commit().code, errc::condition_failed);
  EXPECT_FALSE(kv.get("d", "other").found);
  interactive_txn ro{kv};
  EXPECT_EQ(ro.get("d", "a").value, "y");
  EXPECT_EQ(ro.commit().code, errc::ok);
  // Nothing read or written: nothing sent, ok.
  interactive_txn empty{kv};
  EXPECT_EQ(empty.commit().code, errc::ok);
}

TEST_F(interactive_test, run_transaction_reruns_after_a_conflict_only) {
  ASSERT_TRUE(set.primary_up);
  kv_client kv{sys, set.options()};
  ASSERT_EQ(kv.put("d", "n", "10").code, errc::ok);
  int runs = 0;
  auto r = run_transaction(kv, [&](interactive_txn& t) {
    ++runs;
    auto v = t.get("d", "n");
    if (runs == 1) { // another client writes between the read and the commit
      EXPECT_EQ(kv.put("d", "n", "20").code, errc::ok);
    }
    t.put("d", "n", std::to_string(std::stoi(v.value) + 1));
    return true;
  });
  EXPECT_EQ(r.result.code, errc::ok);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(kv.get("d", "n").value, "21");
  // Abandoned: nothing sent.
  auto a = run_transaction(kv, [&](interactive_txn& t) {
    t.put("d", "n", "never");
    return false;
  });
  EXPECT_TRUE(a.abandoned);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(kv.get("d", "n").value, "21");
  // Any other answer ends it at once: an enqueue on a dictionary is refused
  // (wrong_kind) and not re-run.
  int wrong_runs = 0;
  auto w = run_transaction(kv, [&](interactive_txn& t) {
    ++wrong_runs;
    t.get("d", "n");
    t.enqueue("d", "x");
    return true;
  });
  EXPECT_EQ(w.result.code, errc::wrong_kind);
  EXPECT_EQ(wrong_runs, 1);
  // Always conflicting: gives up after max_attempts with the conflict.
  int hot_runs = 0;
  auto h = run_transaction(
      kv,
      [&](interactive_txn& t) {
        ++hot_runs;
        t.get("d", "n");
        kv.put("d", "n", "bump" + std::to_string(hot_runs));
        return true;
      },
      run_options{3});
  EXPECT_EQ(h.result.code, errc::condition_failed);
  EXPECT_EQ(h.attempts, 3);
  EXPECT_EQ(hot_runs, 3);
}

TEST_F(interactive_test, concurrent_increments_from_threads_lose_nothing) {
  ASSERT_TRUE(set.primary_up);
  kv_client seed{sys, set.options()};
  ASSERT_EQ(seed.put("d", "count", "0").code, errc::ok);
  constexpr int threads = 4;
  constexpr int each = 25;
  std::atomic<int> committed{0}, conflicts{0}, failed{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&] {
      kv_client kv{sys, set.options()};
      for (int j = 0; j < each; ++j) {
        auto r = run_transaction(
            kv,
            [&](interactive_txn& t) {
              auto v = t.get("d", "count");
              if (v.code != errc::ok)
                return false;
              t.put("d", "count", std::to_string(std::stoi(v.value) + 1));
              return true;
            },
            run_options{1000});
        if (r.result.code == errc::ok && !r.abandoned)
          ++committed;
        else
          ++failed;
        conflicts += r.attempts - 1;
      }
    });
  for (auto& t : ts)
    t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(committed.load(), threads * each);
  EXPECT_EQ(seed.get("d", "count").value, std::to_string(threads * each));
  std::printf("%d increments from %d threads, %d conflicts re-run\n", committed.load(),
              threads, conflicts.load());
}

} // namespace
