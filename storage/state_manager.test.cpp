// Persistence of the state manager: durability across reopen, weak mode, group
// commit, failed fsync, checkpoints and log truncation, recovery from a cut
// log tail and from a corrupt checkpoint, backup and restore, async calls,
// metrics.
#include "storage/checkpoint_file.hpp"
#include "storage/collections.hpp"
#include "storage/prometheus_store_probe.hpp"

#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

using namespace conclave::store;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

using conclave::test::code;

namespace {

class store_test : public testing::Test {
protected:
  state_manager_options options() {
    state_manager_options o;
    o.dir = dir / "data";
    o.log = [this](const std::string& line) { log.push_back(line); };
    return o;
  }

  std::unique_ptr<state_manager> open(state_manager_options o) {
    auto r = state_manager::open(std::move(o));
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? std::move(r.value()) : nullptr;
  }

  std::unique_ptr<state_manager> open() { return open(options()); }

  /// Commits keys k<from>..k<to-1> = their index, one transaction each.
  void fill(state_manager& s, int from, int to) {
    auto d = s.dictionary<std::string, int32_t>("d").value();
    for (int i = from; i < to; ++i) {
      auto tx = s.begin();
      ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(i), i));
      ASSERT_TRUE(tx.commit());
    }
  }

  std::map<std::string, int32_t> contents(state_manager& s) {
    auto d = s.dictionary<std::string, int32_t>("d").value();
    auto tx = s.begin();
    std::map<std::string, int32_t> out;
    for (auto& [k, v] : std::vector(d.enumerate(tx).value()))
      out[k] = v;
    return out;
  }

  /// `threads` threads commit `each` transactions; returns the log records
  /// and syncs this added.
  std::pair<uint64_t, uint64_t> commit_concurrently(state_manager& s, int threads,
                                                    int each) {
    auto d = s.dictionary<std::string, std::string>("d").value();
    auto before = s.get_stats();
    std::vector<std::thread> writers;
    for (int w = 0; w < threads; ++w)
      writers.emplace_back([&, w] {
        for (int i = 0; i < each; ++i) {
          auto tx = s.begin();
          ASSERT_TRUE(
              d.add_or_update(tx, std::to_string(w) + "/" + std::to_string(i), "v"));
          ASSERT_TRUE(tx.commit());
        }
      });
    for (auto& t : writers)
      t.join();
    auto after = s.get_stats();
    return {after.log_records - before.log_records, after.log_syncs - before.log_syncs};
  }

  static std::vector<fs::path> segments(const fs::path& data) {
    std::vector<fs::path> out;
    for (auto& e : fs::directory_iterator(data / "log"))
      out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  conclave::test::temp_dir dir{"conclave-store"};
  std::vector<std::string> log;
};

} // namespace

TEST_F(store_test, committed_transactions_survive_a_reopen) {
  {
    auto s = open();
    fill(*s, 0, 20);
    auto q = s->queue<std::string>("q").value();
    auto tx = s->begin();
    ASSERT_TRUE(q.enqueue(tx, "a"));
    ASSERT_TRUE(q.enqueue(tx, "b"));
    ASSERT_TRUE(tx.commit());
    auto lost = s->begin();
    ASSERT_TRUE(q.enqueue(lost, "never committed"));
    EXPECT_GE(s->durable_lsn(), s->last_lsn());
  }
  auto s = open();
  EXPECT_EQ(s->recovery().records_replayed, 23u); // 2 creations + 21 commits
  EXPECT_FALSE(s->recovery().tail_cut);
  auto c = contents(*s);
  ASSERT_EQ(c.size(), 20u);
  EXPECT_EQ(c["k7"], 7);
  auto q = s->queue<std::string>("q").value();
  auto tx = s->begin();
  EXPECT_EQ(q.try_dequeue(tx).value().value, "a");
  EXPECT_EQ(q.try_dequeue(tx).value().value, "b");
  EXPECT_FALSE(q.try_dequeue(tx).value());
}

TEST_F(store_test, a_data_directory_serves_one_store_at_a_time) {
  auto s = open();
  auto second = state_manager::open(options());
  ASSERT_FALSE(second);
  EXPECT_EQ(code(second.error()), errc::directory_in_use);
  s.reset();
  EXPECT_TRUE(state_manager::open(options()));
}

TEST_F(store_test, weak_mode_commits_before_the_sync_and_still_logs) {
  auto o = options();
  o.strong = false;
  {
    auto s = open(o);
    fill(*s, 0, 50);
  }
  auto s = open();
  EXPECT_EQ(contents(*s).size(), 50u);
}

TEST_F(store_test, concurrent_commits_share_fdatasyncs) {
  auto s = open();
  auto [records, syncs] = commit_concurrently(*s, 16, 20);
  EXPECT_EQ(records, 320u);
  EXPECT_LT(syncs, records); // group commit: at least some sharing
}

// One writer's strong commit writes and syncs its record on its own thread
// when no other sync is in flight (no hand-off to the log's writer thread and
// back); an asynchronous commit is synced by the writer thread.
TEST_F(store_test, a_lone_strong_commit_syncs_on_the_committing_thread) {
  std::mutex mtx;
  std::vector<std::thread::id> syncers;
  auto o = options();
  o.sync = [&](int fd) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      syncers.push_back(std::this_thread::get_id());
    }
    return ::fdatasync(fd);
  };
  auto s = open(o);
  auto d = s->dictionary<std::string, int32_t>("d").value();
  auto me = std::this_thread::get_id();
  for (int i = 0; i < 5; ++i) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      syncers.clear();
    }
    auto tx = s->begin();
    ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(i), i));
    ASSERT_TRUE(tx.commit());
    std::lock_guard<std::mutex> guard{mtx};
    ASSERT_FALSE(syncers.empty());
    for (auto& id : syncers)
      EXPECT_EQ(id, me) << "commit " << i << " was synced by another thread";
  }
  {
    std::lock_guard<std::mutex> guard{mtx};
    syncers.clear();
  }
  auto tx = s->begin();
  ASSERT_TRUE(d.add_or_update(tx, "async", 1));
  std::promise<result<lsn>> done;
  s->commit_async(tx.id(), [&](result<lsn> r) { done.set_value(std::move(r)); });
  ASSERT_TRUE(done.get_future().get());
  std::lock_guard<std::mutex> guard{mtx};
  ASSERT_FALSE(syncers.empty());
  for (auto& id : syncers)
    EXPECT_NE(id, me);
}

TEST_F(store_test, serial_mode_syncs_every_commit) {
  auto o = options();
  o.group_commit = false;
  auto s = open(o);
  auto [records, syncs] = commit_concurrently(*s, 4, 10);
  EXPECT_EQ(records, 40u);
  EXPECT_EQ(syncs, records);
}

TEST_F(store_test, a_failed_fsync_stops_the_store_and_loses_no_acknowledged_commit) {
  std::atomic<int> syncs{0};
  std::atomic<int> fail_after{1000000};
  auto o = options();
  o.sync = [&](int fd) {
    if (++syncs > fail_after) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  prometheus_store_probe probe;
  o.probe = &probe;
  {
    auto s = open(o);
    fill(*s, 0, 10);
    fail_after = syncs.load(); // the next sync fails
    auto d = s->dictionary<std::string, int32_t>("d").value();
    auto tx = s->begin();
    ASSERT_TRUE(d.add_or_update(tx, "k10", 10));
    auto r = tx.commit();
    ASSERT_FALSE(r);
    EXPECT_EQ(code(r.error()), errc::io_failure);
    EXPECT_EQ(code(s->begin_txn().error()), errc::store_failed);
    EXPECT_TRUE(s->failure());
    // No retry past the failed sync.
    auto calls = syncs.load();
    auto again = s->begin();
    EXPECT_FALSE(again.active());
    EXPECT_EQ(syncs.load(), calls);
  }
  bool reported = false;
  for (auto& line : log)
    reported |= line.find("stopped") != std::string::npos;
  EXPECT_TRUE(reported);
  auto text = prometheus::TextSerializer{}.Serialize(probe.registry()->Collect());
  EXPECT_NE(text.find("conclave_store_failed 1"), std::string::npos) << text;
  auto s = open();
  auto c = contents(*s);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(c["k" + std::to_string(i)], i);
}

TEST_F(store_test, checkpoint_then_truncate_then_recover_from_it) {
  lsn at;
  {
    auto s = open();
    fill(*s, 0, 30);
    at = s->checkpoint().value();
    EXPECT_EQ(at, s->last_lsn());
    fill(*s, 30, 40);
    // A second checkpoint drops the log up to the first one.
    auto second = s->checkpoint().value();
    fill(*s, 40, 45);
    EXPECT_EQ(list_checkpoints(options().dir).size(), 2u);
    EXPECT_GT(second, at);
    at = second;
  }
  auto s = open();
  EXPECT_EQ(s->recovery().checkpoint, at);
  EXPECT_EQ(s->recovery().records_replayed, 5u);
  EXPECT_EQ(contents(*s).size(), 45u);
}

TEST_F(store_test, checkpoints_are_taken_automatically_by_log_volume) {
  auto o = options();
  o.checkpoint_log_bytes = 4096;
  o.segment_bytes = 2048;
  {
    auto s = open(o);
    fill(*s, 0, 600);
    // The checkpointer is a thread of its own: on a loaded machine it may not
    // have run yet when the last commit returns (and a checkpoint still wanted
    // at close is not taken). Give it up to 10 s to catch up.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((s->get_stats().checkpoints == 0 || segments(o.dir).size() >= 8)
           && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_GT(s->get_stats().checkpoints, 0u);
    // The log was truncated: far fewer segments than 600 records would need (17).
    EXPECT_LT(segments(o.dir).size(), 8u);
  }
  EXPECT_FALSE(list_checkpoints(o.dir).empty());
  auto s = open(o);
  EXPECT_EQ(contents(*s).size(), 600u);
  EXPECT_GT(s->recovery().checkpoint.value, 0u);
}

TEST_F(store_test, a_corrupt_checkpoint_is_reported_and_the_previous_one_used) {
  prometheus_store_probe probe;
  {
    auto s = open();
    fill(*s, 0, 10);
    ASSERT_TRUE(s->checkpoint());
    fill(*s, 10, 20);
    ASSERT_TRUE(s->checkpoint());
    fill(*s, 20, 25);
  }
  auto files = list_checkpoints(options().dir);
  ASSERT_EQ(files.size(), 2u);
  {
    std::fstream f{files.front(), std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(fs::file_size(files.front()) / 2));
    f.put('\x5A');
  }
  auto o = options();
  o.probe = &probe;
  auto s = open(o);
  ASSERT_EQ(s->recovery().corrupt_checkpoints.size(), 1u);
  EXPECT_EQ(s->recovery().checkpoint, read_checkpoint(files.back()).value().at);
  EXPECT_EQ(contents(*s).size(), 25u);
  // Set aside, so the next checkpoints keep the good one as their fallback.
  EXPECT_EQ(list_checkpoints(options().dir).size(), 1u);
  EXPECT_TRUE(fs::exists(files.front().string() + ".corrupt"));
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.front().find("corrupt"), std::string::npos);
  auto text = prometheus::TextSerializer{}.Serialize(probe.registry()->Collect());
  EXPECT_NE(text.find("conclave_store_corruptions_total{what=\"checkpoint\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(store_test, a_torn_log_tail_is_cut_reported_and_counted) {
  {
    auto o = options();
    o.preallocate_bytes = 0; // so that cutting the file's end cuts the record
    auto s = open(o);
    fill(*s, 0, 10);
  }
  auto last = segments(options().dir).back();
  fs::resize_file(last, fs::file_size(last) - 3);
  prometheus_store_probe probe;
  auto o = options();
  o.probe = &probe;
  {
    auto s = open(o);
    EXPECT_TRUE(s->recovery().tail_cut);
    auto c = contents(*s);
    EXPECT_EQ(c.size(), 9u);
    EXPECT_EQ(c.count("k9"), 0u);
    fill(*s, 9, 12); // the log continues after the cut
  }
  bool reported = false;
  for (auto& line : log)
    reported |= line.find("cut") != std::string::npos;
  EXPECT_TRUE(reported);
  auto text = prometheus::TextSerializer{}.Serialize(probe.registry()->Collect());
  EXPECT_NE(text.find("conclave_store_corruptions_total{what=\"log_tail\"} 1"),
            std::string::npos);
  auto s = open();
  EXPECT_FALSE(s->recovery().tail_cut);
  EXPECT_EQ(contents(*s).size(), 12u);
}

TEST_F(store_test, full_and_incremental_backups_restore_the_same_contents) {
  auto backups = dir / "backups";
  std::map<std::string, int32_t> expected;
  {
    auto s = open();
    fill(*s, 0, 10);
    ASSERT_TRUE(s->checkpoint());
    fill(*s, 10, 15);
    auto full = s->backup(backups, false);
    ASSERT_TRUE(full) << full.error().message();
    fill(*s, 15, 25);
    auto incr = s->backup(backups, true);
    ASSERT_TRUE(incr) << incr.error().message();
    EXPECT_GT(incr.value().to, full.value().to);
    expected = contents(*s);
    fill(*s, 25, 30); // after the last backup: not restored
  }
  auto restored = dir / "restored";
  auto r = state_manager::restore(backups, restored);
  ASSERT_TRUE(r) << r.error().message();
  auto o = options();
  o.dir = restored;
  auto s = open(o);
  EXPECT_EQ(contents(*s), expected);
  EXPECT_EQ(expected.size(), 25u);
  // A backup interrupted by a crash (hidden temporary directory) is ignored.
  fs::create_directories(backups / ".000009-full.tmp");
  auto again = dir / "restored-again";
  ASSERT_TRUE(state_manager::restore(backups, again));
  // A non-empty target is refused.
  EXPECT_EQ(code(state_manager::restore(backups, restored).error()), errc::bad_argument);
}

TEST_F(store_test, async_operations_complete_when_the_lock_is_granted) {
  auto s = open();
  auto d = s->dictionary<std::string, std::string>("d").value();
  auto holder = s->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "held"));
  auto waiter = s->begin_txn().value();
  op_request req;
  req.txn = waiter;
  req.op = operation::add_or_update;
  req.collection = "d";
  req.key = "k";
  req.value = "waited";
  std::promise<result<op_result>> done;
  s->execute_async(req, 10s, [&](result<op_result> r) { done.set_value(std::move(r)); });
  auto f = done.get_future();
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout); // parked, not blocking us
  ASSERT_TRUE(holder.commit());
  auto r = f.get(); // granted on the committing thread
  ASSERT_TRUE(r);
  EXPECT_TRUE(r.value().found);
  std::promise<result<lsn>> committed;
  s->commit_async(waiter, [&](result<lsn> l) { committed.set_value(l); });
  auto l = committed.get_future().get();
  ASSERT_TRUE(l);
  EXPECT_LE(l.value(), s->durable_lsn());
  auto tx = s->begin();
  EXPECT_EQ(d.try_get(tx, "k").value().value, "waited");
}

TEST_F(store_test, metrics_count_commits_aborts_waits_and_log_bytes) {
  prometheus_store_probe probe;
  auto o = options();
  o.probe = &probe;
  auto s = open(o);
  fill(*s, 0, 3);
  auto tx = s->begin();
  ASSERT_TRUE(tx.abort());
  auto holder = s->begin();
  auto d = s->dictionary<std::string, int32_t>("d").value();
  ASSERT_TRUE(d.add_or_update(holder, "k0", 1));
  auto other = s->begin();
  EXPECT_EQ(code(d.add_or_update(other, "k0", 2, 20ms).error()), errc::lock_timeout);
  ASSERT_TRUE(s->checkpoint());
  auto text = prometheus::TextSerializer{}.Serialize(probe.registry()->Collect());
  for (auto expected :
       {"conclave_store_commits_total 3", "conclave_store_aborts_total 1",
        "conclave_store_lock_waits_total 1", "conclave_store_lock_timeouts_total 1",
        "conclave_store_checkpoints_total 1",
        "conclave_store_commit_duration_seconds_count 3"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  EXPECT_EQ(text.find("conclave_store_log_bytes_total 0"), std::string::npos);
}
