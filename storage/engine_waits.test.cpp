// What the state manager makes callers wait for, and what it must not:
// - a read-only commit in strong mode waits until everything it read is
//   durable (a crash must not take back a value a reader returned);
// - a lock wait times out on time (a manual deadline clock) while a
//   checkpoint write is stuck, and the store keeps committing meanwhile (the image is
//   taken under the store's lock, the file written without it, on its own thread);
// - lock timeouts of 0, 1 ms and milliseconds::max() (saturated, not
//   overflowed);
// - a failed checkpoint write is reported, counted and retried; the log is
//   kept and the store goes on.
// Syncs are held back or failed by a test hook (sync_gate), so the order of
// events is forced, not timed.
#include "storage/collections.hpp"
#include "storage/prometheus_store_probe.hpp"

#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <future>
#include <thread>

#include <unistd.h>

using namespace conclave::store;
using namespace std::chrono_literals;

using conclave::test::code;

namespace {

/// A sync hook that a test can hold back or make fail. While held, a call
/// counts itself as entered and blocks until release() (at most 60 s).
class sync_gate {
public:
  std::function<int(int)> hook() {
    return [this](int fd) { return pass(fd); };
  }
  void hold() {
    std::lock_guard<std::mutex> guard{mtx_};
    held_ = true;
  }
  void release() {
    std::lock_guard<std::mutex> guard{mtx_};
    held_ = false;
    cv_.notify_all();
  }
  /// The next `n` calls fail with EIO.
  void fail_next(int n) {
    std::lock_guard<std::mutex> guard{mtx_};
    failures_ = n;
  }
  /// Waits (bounded, as a guard against a hang) until `n` calls are blocked.
  bool wait_entered(int n) {
    std::unique_lock<std::mutex> lk{mtx_};
    return cv_.wait_for(lk, 30s, [&] { return entered_ >= n; });
  }

private:
  int pass(int fd) {
    std::unique_lock<std::mutex> lk{mtx_};
    if (held_) {
      ++entered_;
      cv_.notify_all();
      // Bounded, so that a test failing while it holds the gate still ends.
      cv_.wait_for(lk, 60s, [&] { return !held_; });
    }
    if (failures_ > 0) {
      --failures_;
      errno = EIO;
      return -1;
    }
    lk.unlock();
    return ::fdatasync(fd);
  }

  std::mutex mtx_;
  std::condition_variable cv_;
  bool held_ = false;
  int entered_ = 0;
  int failures_ = 0;
};

class waits_test : public testing::Test {
protected:
  state_manager_options options() {
    state_manager_options o;
    o.dir = dir / "data";
    o.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> guard{log_mtx};
      log.push_back(line);
    };
    return o;
  }

  std::unique_ptr<state_manager> open(state_manager_options o) {
    auto r = state_manager::open(std::move(o));
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? std::move(r.value()) : nullptr;
  }

  static void put(state_manager& s, const std::string& k, const std::string& v) {
    auto d = s.dictionary<std::string, std::string>("d").value();
    auto tx = s.begin();
    ASSERT_TRUE(d.add_or_update(tx, k, v));
    ASSERT_TRUE(tx.commit());
  }

  bool logged(const std::string& part) {
    std::lock_guard<std::mutex> guard{log_mtx};
    for (auto& l : log)
      if (l.find(part) != std::string::npos)
        return true;
    return false;
  }

  conclave::test::temp_dir dir{"conclave-waits"};
  std::mutex log_mtx;
  std::vector<std::string> log;
};

/// Polls `done` for up to 30 s (a guard against a hang, not a timing claim).
template <class F>
bool eventually(F done) {
  for (auto until = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(1ms))
    if (done())
      return true;
  return done();
}

} // namespace

// The fdatasync of a writer's commit is held back: its value is applied and
// visible (locks are released early), not durable. A reader that saw it must
// not get its commit acknowledged before the sync, because a crash now would
// take the value back; a reader that saw only durable data is acknowledged at
// once.
TEST_F(waits_test, a_read_only_commit_waits_until_what_it_read_is_durable) {
  sync_gate gate;
  auto o = options();
  o.sync = gate.hook();
  auto s = open(o);
  ASSERT_TRUE(s);
  auto d = s->dictionary<std::string, std::string>("d").value();
  put(*s, "k", "old");
  put(*s, "other", "x");
  auto early = s->begin(); // reads only durable data
  ASSERT_EQ(d.try_get(early, "other").value().value, "x");

  gate.hold();
  auto writer = std::async(std::launch::async, [&] {
    auto tx = s->begin();
    EXPECT_TRUE(d.add_or_update(tx, "k", "new"));
    return tx.commit();
  });
  ASSERT_TRUE(gate.wait_entered(1)); // applied, written, sync held

  auto repeatable = s->begin();
  ASSERT_EQ(d.try_get(repeatable, "k").value().value, "new");
  auto snapshot = s->begin();
  auto all = d.enumerate(snapshot).value();
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].second, "new");

  std::promise<result<lsn>> acked;
  s->commit_async(repeatable.id(), [&](result<lsn> r) { acked.set_value(r); });
  auto acked_f = acked.get_future();
  EXPECT_EQ(acked_f.wait_for(0s), std::future_status::timeout)
      << "a read of a non-durable value was acknowledged";
  auto blocking = std::async(std::launch::async, [&] { return snapshot.commit(); });
  // Cannot complete while the sync is held; with the defect it returned at once.
  EXPECT_EQ(blocking.wait_for(50ms), std::future_status::timeout);
  // Reads of durable data only are not held up by the pending sync.
  std::promise<result<lsn>> early_acked;
  s->commit_async(early.id(), [&](result<lsn> r) { early_acked.set_value(r); });
  EXPECT_EQ(early_acked.get_future().wait_for(0s), std::future_status::ready);
  ASSERT_EQ(writer.wait_for(0s), std::future_status::timeout);

  gate.release();
  ASSERT_TRUE(writer.get());
  ASSERT_EQ(acked_f.wait_for(30s), std::future_status::ready);
  auto r = acked_f.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value(), lsn{}); // read-only: no record
  auto b = blocking.get();
  ASSERT_TRUE(b);
  EXPECT_EQ(b.value(), lsn{});
  EXPECT_GE(s->durable_lsn(), s->last_lsn());
}

// Weak mode acknowledges commits before they are durable, so read-only commits
// do not wait either.
TEST_F(waits_test, weak_mode_read_only_commits_do_not_wait) {
  sync_gate gate;
  auto o = options();
  o.sync = gate.hook();
  o.strong = false;
  auto s = open(o);
  ASSERT_TRUE(s);
  auto d = s->dictionary<std::string, std::string>("d").value();
  gate.hold();
  put(*s, "k", "new"); // returns although its sync is held
  ASSERT_TRUE(gate.wait_entered(1));
  auto reader = s->begin();
  ASSERT_EQ(d.try_get(reader, "k").value().value, "new");
  std::promise<result<lsn>> acked;
  s->commit_async(reader.id(), [&](result<lsn> r) { acked.set_value(r); });
  EXPECT_EQ(acked.get_future().wait_for(0s), std::future_status::ready);
  gate.release();
}

// An automatic checkpoint's write is stuck in its fsync. Lock deadlines run on
// a manual clock: a 100 ms lock wait must end with lock_timeout once the clock
// passes its deadline, while the write is still stuck (the test releases it
// only afterwards), and commits must go on meanwhile.
TEST_F(waits_test, a_lock_wait_times_out_on_time_while_a_checkpoint_write_is_stuck) {
  sync_gate gate;
  std::atomic<int64_t> clock_ns{1'000'000'000};
  auto o = options();
  o.checkpoint_sync = gate.hook();
  o.checkpoint_log_bytes = 1; // every commit asks for a checkpoint
  o.clock = [&] { return timestamp{clock_ns.load()}; };
  auto s = open(o);
  ASSERT_TRUE(s);
  auto d = s->dictionary<std::string, std::string>("d").value();
  gate.hold();
  put(*s, "a", "1");
  ASSERT_TRUE(gate.wait_entered(1)); // the checkpoint thread is stuck

  auto holder = s->begin();
  ASSERT_TRUE(d.add_or_update(holder, "b", "held"));
  auto waiter_tx = s->begin();
  op_request req;
  req.txn = waiter_tx.id();
  req.op = operation::try_get;
  req.collection = "d";
  req.key = key_codec<std::string>::encode("b");
  std::promise<result<op_result>> done;
  s->execute_async(req, 100ms,
                   [&](result<op_result> r) { done.set_value(std::move(r)); });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(0s), std::future_status::timeout); // parked
  clock_ns += std::chrono::nanoseconds{100ms}.count();    // the deadline passes
  s->clock_advanced();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready)
      << "the lock wait did not time out while the checkpoint was stuck";
  auto r = f.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(code(r.error()), errc::lock_timeout);
  // The store is not held by the checkpoint: other commits go through.
  put(*s, "c", "3");
  ASSERT_TRUE(holder.commit());
  EXPECT_EQ(s->get_stats().lock_timeouts, 1u);
  gate.release();
}

// 0: fail at once when the lock is held; 1 ms: fail after it; max (and 300
// years): no overflow into the past, the wait lasts until the lock is free.
TEST_F(waits_test, lock_timeouts_of_zero_one_ms_and_max_behave) {
  auto s = open(options());
  ASSERT_TRUE(s);
  auto d = s->dictionary<std::string, std::string>("d").value();
  auto holder = s->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "v"));
  for (auto t : {0ms, 1ms}) {
    auto tx = s->begin();
    auto r = d.try_get(tx, "k", read_mode::repeatable, t);
    ASSERT_FALSE(r) << t.count() << " ms";
    EXPECT_EQ(code(r.error()), errc::lock_timeout) << t.count() << " ms";
  }
  using years = std::chrono::duration<int64_t, std::ratio<31556952>>;
  for (auto t : {std::chrono::milliseconds::max(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(years{300})}) {
    auto tx = s->begin();
    std::promise<result<op_result>> done;
    op_request req;
    req.txn = tx.id();
    req.op = operation::try_get;
    req.collection = "d";
    req.key = key_codec<std::string>::encode("k");
    s->execute_async(req, t, [&](result<op_result> r) { done.set_value(std::move(r)); });
    auto f = done.get_future();
    // Parked, not failed at once (the defect: lock_timeout right away).
    ASSERT_EQ(f.wait_for(0s), std::future_status::timeout) << t.count() << " ms";
    ASSERT_TRUE(tx.abort()); // the parked request fails, the lock is not taken
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    auto r = f.get();
    ASSERT_FALSE(r);
    EXPECT_EQ(code(r.error()), errc::transaction_finished);
  }
  // And a max wait is granted when the holder commits.
  auto tx = s->begin();
  auto waiter = std::async(std::launch::async, [&] {
    return d.try_get(tx, "k", read_mode::repeatable, std::chrono::milliseconds::max());
  });
  ASSERT_TRUE(eventually([&] { return s->get_stats().lock_waits >= 5; }));
  ASSERT_TRUE(holder.commit());
  auto r = waiter.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().value, "v");
  EXPECT_EQ(s->get_stats().lock_timeouts, 2u);
}

// The checkpoint file's fsync fails: the store reports it (log line, metric),
// keeps running and keeps the log, and the automatic retry succeeds. A failed
// explicit checkpoint() is returned to its caller, the store goes on too.
TEST_F(waits_test, a_failed_checkpoint_write_is_reported_retried_and_the_store_goes_on) {
  sync_gate gate;
  prometheus_store_probe probe;
  auto o = options();
  o.checkpoint_sync = gate.hook();
  o.probe = &probe;
  o.checkpoint_log_bytes = 0; // explicit checkpoints first
  o.checkpoint_retry_delay = 0ms;
  {
    auto s = open(o);
    ASSERT_TRUE(s);
    put(*s, "a", "1");
    gate.fail_next(1);
    auto c = s->checkpoint();
    ASSERT_FALSE(c);
    EXPECT_FALSE(s->failure());
    EXPECT_TRUE(logged("failed")) << "no log line for the failed checkpoint";
    put(*s, "b", "2"); // still serving
    EXPECT_TRUE(s->checkpoint());
    EXPECT_EQ(s->get_stats().checkpoint_failures, 1u);
  }
  o.checkpoint_log_bytes = 1; // now automatic ones
  {
    auto s = open(o);
    ASSERT_TRUE(s);
    auto before = s->get_stats().checkpoints;
    gate.fail_next(1);
    put(*s, "c", "3");
    ASSERT_TRUE(eventually([&] { return s->get_stats().checkpoint_failures >= 1; }));
    ASSERT_TRUE(eventually([&] { return s->get_stats().checkpoints > before; }))
        << "the failed automatic checkpoint was not retried";
    EXPECT_FALSE(s->failure());
    EXPECT_TRUE(logged("retrying"));
    put(*s, "d", "4");
  }
  auto text = prometheus::TextSerializer{}.Serialize(probe.registry()->Collect());
  EXPECT_NE(text.find("conclave_store_checkpoint_failures_total 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("conclave_store_failed 0"), std::string::npos) << text;
  // Nothing was lost: every commit is there after a reopen.
  o.checkpoint_sync = {};
  auto s = open(o);
  ASSERT_TRUE(s);
  auto d = s->dictionary<std::string, std::string>("d").value();
  auto tx = s->begin();
  EXPECT_EQ(d.enumerate(tx).value().size(), 4u);
}
