// The store actor with a real actor system: requests are answered without
// blocking the actor while another transaction holds a lock, lock timeouts and
// bad inputs come back as typed errors, and the messages serialize.
#include "actors/store/store_actor.hpp"

#include "storage/collections.hpp"
#include "tests/support/store_requests.hpp"
#include "tests/support/temp_dir.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/scoped_actor.hpp>

#include <gtest/gtest.h>

#include <condition_variable>
#include <limits>
#include <mutex>

#include <unistd.h>

using namespace conclave::store;
using namespace std::chrono_literals;
namespace atoms = conclave::store_atoms;

namespace {

/// A store actor over a real store whose log fdatasyncs a test can hold back
/// (`held`, at most 60 s; `entered` counts syncs that waited).
class store_actor_test : public testing::Test {
protected:
  store_actor_test() : sys(init(cfg)) {
    state_manager_options o;
    o.dir = dir.path();
    o.log = [](const std::string&) {};
    o.sync = [this](int fd) {
      std::unique_lock<std::mutex> lk{mtx};
      if (held) {
        ++entered;
        cv.notify_all();
        cv.wait_for(lk, 60s, [&] { return !held; });
      }
      lk.unlock();
      return ::fdatasync(fd);
    };
    store = std::shared_ptr<state_manager>{state_manager::open(o).value().release()};
    actor = spawn_store_actor(sys, store);
  }

  ~store_actor_test() override {
    release();
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }

  void release() {
    std::lock_guard<std::mutex> guard{mtx};
    held = false;
    cv.notify_all();
  }

  static caf::actor_system_config& init(caf::actor_system_config& c) {
    add_store_types(c);
    return c;
  }

  template <class T, class... Ts>
  std::pair<T, caf::error> ask(Ts&&... xs) {
    std::pair<T, caf::error> out{};
    caf::scoped_actor self{sys};
    self->request(actor, 30s, std::forward<Ts>(xs)...)
        .receive([&](T& x) { out.first = std::move(x); },
                 [&](caf::error& e) { out.second = std::move(e); });
    return out;
  }

  op_request req(txn_id t, operation op, std::string key, std::string value = {}) {
    return conclave::test::dictionary_request(t, op, std::move(key), std::move(value));
  }

  std::mutex mtx;
  std::condition_variable cv;
  bool held = false;
  int entered = 0;
  conclave::test::temp_dir dir{"conclave-actor"};
  caf::actor_system_config cfg;
  caf::actor_system sys;
  std::shared_ptr<state_manager> store;
  store_actor actor;
};

} // namespace

TEST_F(store_actor_test, a_transaction_through_messages) {
  auto opened =
      ask<bool>(atoms::open_atom_v, std::string{"d"}, collection_kind::dictionary,
                std::string{"k"}, std::string{"v"});
  ASSERT_FALSE(opened.second);
  auto t = ask<txn_id>(atoms::begin_atom_v).first;
  auto put = ask<op_result>(req(t, operation::add_or_update, "k", "v"), uint32_t{0});
  ASSERT_FALSE(put.second) << caf::to_string(put.second);
  auto l = ask<uint64_t>(atoms::commit_atom_v, t);
  ASSERT_FALSE(l.second);
  EXPECT_GT(l.first, 0u);
  EXPECT_LE(l.first, store->durable_lsn().value); // strong mode: durable on reply
  auto r = ask<txn_id>(atoms::begin_atom_v).first;
  auto got = ask<op_result>(req(r, operation::try_get, "k"), uint32_t{0});
  EXPECT_TRUE(got.first.found);
  EXPECT_EQ(got.first.value, "v");
  auto ck = ask<uint64_t>(atoms::checkpoint_atom_v);
  EXPECT_EQ(ck.first, l.first);
}

TEST_F(store_actor_test, a_waiting_request_does_not_block_the_actor) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto holder = store->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "held"));
  auto t = ask<txn_id>(atoms::begin_atom_v).first;
  caf::scoped_actor self{sys};
  bool answered = false;
  // A plain send: the answer comes back as an ordinary message, read below.
  self->send(actor, req(t, operation::add_or_update, "k", "mine"), uint32_t{20000});
  // While that request waits for the lock, the actor serves others.
  auto other = ask<txn_id>(atoms::begin_atom_v);
  ASSERT_FALSE(other.second);
  auto free_key =
      ask<op_result>(req(other.first, operation::try_get, "free"), uint32_t{0});
  ASSERT_FALSE(free_key.second);
  EXPECT_EQ(store->get_stats().lock_waits, 1u);
  ASSERT_TRUE(holder.commit());
  self->receive(
      [&](op_result& r) {
        EXPECT_TRUE(r.found);
        answered = true;
      },
      caf::after(30s) >> [] { FAIL() << "no answer after the lock was freed"; });
  EXPECT_TRUE(answered);
  EXPECT_FALSE(ask<uint64_t>(atoms::commit_atom_v, t).second);
  auto check = store->begin();
  EXPECT_EQ(d.try_get(check, "k").value().value, "mine");
}

TEST_F(store_actor_test, timeouts_and_bad_requests_are_typed_errors) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto holder = store->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "held"));
  auto t = ask<txn_id>(atoms::begin_atom_v).first;
  auto timed_out = ask<op_result>(req(t, operation::try_get, "k"), uint32_t{30});
  EXPECT_EQ(to_errc(timed_out.second), errc::lock_timeout);
  EXPECT_TRUE(ask<bool>(atoms::abort_atom_v, t).first);
  auto finished = ask<op_result>(req(t, operation::try_get, "k"), uint32_t{0});
  EXPECT_EQ(to_errc(finished.second), errc::transaction_finished);
  auto u = ask<txn_id>(atoms::begin_atom_v).first;
  auto unknown = req(u, operation::try_get, "k");
  unknown.collection = "nope";
  EXPECT_EQ(to_errc(ask<op_result>(unknown, uint32_t{0}).second),
            errc::unknown_collection);
  auto wrong = ask<bool>(atoms::open_atom_v, std::string{"d"}, collection_kind::queue,
                         std::string{}, std::string{"x"});
  EXPECT_EQ(to_errc(wrong.second), errc::wrong_type);
  auto big = req(u, operation::add, "k2", std::string(2u << 20, 'x'));
  EXPECT_EQ(to_errc(ask<op_result>(big, uint32_t{0}).second), errc::too_large);
}

TEST_F(store_actor_test, a_batch_runs_checks_writes_and_commit_in_one_request) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  op_batch b;
  b.ops.push_back(req({}, operation::add, "a", "1"));
  b.ops.push_back(req({}, operation::add, "b", "2"));
  b.commit = true;
  auto r = ask<batch_result>(b, uint32_t{0});
  ASSERT_FALSE(r.second) << caf::to_string(r.second);
  EXPECT_EQ(r.first.results.size(), 2u);
  EXPECT_GT(r.first.lsn, 0u);
  EXPECT_LE(r.first.lsn, store->durable_lsn().value); // strong: durable on reply
  // A check that does not hold: nothing runs, nothing is written.
  op_batch late;
  late.checks.push_back(batch_check{"d", "a", check_kind::equals, "0"});
  late.ops.push_back(req({}, operation::add_or_update, "c", "late"));
  late.commit = true;
  auto f = ask<batch_result>(late, uint32_t{0});
  ASSERT_FALSE(f.second);
  EXPECT_EQ(f.first.failed_check, 1u);
  // A failing operation aborts the whole batch.
  op_batch dup;
  dup.ops.push_back(req({}, operation::add_or_update, "c", "x"));
  dup.ops.push_back(req({}, operation::add, "a", "again"));
  dup.commit = true;
  EXPECT_EQ(to_errc(ask<batch_result>(dup, uint32_t{0}).second), errc::key_exists);
  auto check = store->begin();
  EXPECT_EQ(d.try_get(check, "a").value().value, "1");
  EXPECT_FALSE(d.try_get(check, "c").value().has_value);
}

TEST_F(store_actor_test, a_batch_waiting_for_a_lock_continues_when_it_is_freed) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto holder = store->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "held"));
  op_batch b;
  b.ops.push_back(req({}, operation::add_or_update, "free", "1"));
  b.ops.push_back(req({}, operation::try_get, "k"));
  b.ops.push_back(req({}, operation::add_or_update, "k", "mine"));
  b.commit = true;
  caf::scoped_actor self{sys};
  self->send(actor, b, uint32_t{20000});
  // The actor serves others meanwhile.
  EXPECT_FALSE(ask<txn_id>(atoms::begin_atom_v).second);
  ASSERT_TRUE(holder.commit());
  bool answered = false;
  self->receive(
      [&](batch_result& r) {
        ASSERT_EQ(r.results.size(), 3u);
        EXPECT_EQ(r.results[1].value, "held");
        answered = true;
      },
      caf::after(30s) >> [] { FAIL() << "no answer after the lock was freed"; });
  EXPECT_TRUE(answered);
  {
    auto check = store->begin();
    EXPECT_EQ(d.try_get(check, "k").value().value, "mine");
    ASSERT_TRUE(check.commit());
  }
  // A batch whose lock wait times out writes nothing and frees its locks.
  auto holder2 = store->begin();
  ASSERT_TRUE(d.add_or_update(holder2, "k", "held2"));
  op_batch t;
  t.ops.push_back(req({}, operation::add_or_update, "free", "2"));
  t.ops.push_back(req({}, operation::try_get, "k"));
  t.commit = true;
  EXPECT_EQ(to_errc(ask<batch_result>(t, uint32_t{30}).second), errc::lock_timeout);
  ASSERT_TRUE(holder2.commit());
  auto after = store->begin();
  EXPECT_EQ(d.try_get(after, "free").value().value, "1");
  ASSERT_TRUE(after.commit());
  auto w = store->begin();
  EXPECT_TRUE(d.add_or_update(w, "free", "3")); // no lock left behind
  EXPECT_TRUE(w.commit());
}

TEST(store_messages, requests_and_results_serialize) {
  op_request r;
  r.txn = txn_id{9};
  r.op = operation::enumerate;
  r.collection = "c";
  r.has_from = true;
  r.from = "a";
  r.mode = read_mode::update;
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  ASSERT_FALSE(sink(r));
  op_request back;
  caf::binary_deserializer source{nullptr, buf};
  ASSERT_FALSE(source(back));
  EXPECT_EQ(back.txn, r.txn);
  EXPECT_EQ(back.op, operation::enumerate);
  EXPECT_EQ(back.mode, read_mode::update);
  EXPECT_TRUE(back.has_from);
  EXPECT_EQ(back.from, "a");
  EXPECT_EQ(caf::to_string(make_error(errc::lock_timeout)).find("lock_timeout")
                != std::string::npos,
            true);
}

using store_actor_sync_test = store_actor_test;

// Through the actor as through the engine: a read-only transaction that read
// a value whose record is not yet durable is not answered before the sync.
TEST_F(store_actor_sync_test,
       a_read_only_commit_is_answered_only_once_what_it_read_is_durable) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  {
    auto tx = store->begin();
    ASSERT_TRUE(d.add_or_update(tx, "k", "old"));
    ASSERT_TRUE(tx.commit());
  }
  {
    std::lock_guard<std::mutex> guard{mtx};
    held = true;
  }
  auto writer = store->begin_txn().value();
  ASSERT_TRUE(store->execute(req(writer, operation::add_or_update, "k", "new"), 1s));
  store->commit_async(writer, [](result<lsn>) {});
  {
    std::unique_lock<std::mutex> lk{mtx};
    ASSERT_TRUE(cv.wait_for(lk, 30s, [&] { return entered >= 1; }));
  }
  caf::scoped_actor self{sys};
  txn_id reader;
  self->request(actor, 30s, atoms::begin_atom_v)
      .receive([&](txn_id t) { reader = t; }, [](caf::error&) {});
  std::string seen;
  self->request(actor, 30s, req(reader, operation::try_get, "k"), uint32_t{0})
      .receive([&](op_result& r) { seen = r.value; }, [](caf::error&) {});
  ASSERT_EQ(seen, "new"); // applied, visible, not durable
  self->send(actor, atoms::commit_atom_v, reader);
  bool early = false;
  self->receive([&](uint64_t) { early = true; }, [&](caf::error&) { early = true; },
                caf::after(100ms) >> [] {});
  EXPECT_FALSE(early) << "a read of a non-durable value was acknowledged";
  release();
  bool answered = false;
  if (!early)
    self->receive([&](uint64_t) { answered = true; }, [](caf::error&) {},
                  caf::after(30s) >> [] {});
  EXPECT_TRUE(answered || early);
  EXPECT_GE(store->durable_lsn(), store->last_lsn());
}

// Lock timeouts through the actor: 1 ms times out, the largest value (about
// 49 days) waits and is granted when the holder commits; 0 is documented as
// the default timeout (4 s), not "fail at once".
TEST_F(store_actor_sync_test, lock_timeouts_of_one_ms_and_max_through_the_actor) {
  auto d = store->dictionary<std::string, std::string>("d").value();
  auto holder = store->begin();
  ASSERT_TRUE(d.add_or_update(holder, "k", "held"));
  caf::scoped_actor self{sys};
  txn_id t;
  self->request(actor, 30s, atoms::begin_atom_v)
      .receive([&](txn_id x) { t = x; }, [](caf::error&) {});
  caf::error one;
  self->request(actor, 30s, req(t, operation::try_get, "k"), uint32_t{1})
      .receive([](op_result&) {}, [&](caf::error& e) { one = e; });
  EXPECT_EQ(to_errc(one), errc::lock_timeout);
  self->send(actor, req(t, operation::try_get, "k"),
             std::numeric_limits<uint32_t>::max());
  bool early = false;
  self->receive([&](op_result&) { early = true; }, [&](caf::error&) { early = true; },
                caf::after(50ms) >> [] {});
  EXPECT_FALSE(early) << "a max timeout failed or was granted while the lock was held";
  ASSERT_TRUE(holder.commit());
  bool granted = false;
  self->receive([&](op_result& r) { granted = r.found && r.value == "held"; },
                [](caf::error&) {}, caf::after(30s) >> [] {});
  EXPECT_TRUE(granted);
}
