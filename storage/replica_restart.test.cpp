// Three replica hosts (actors/replication) on CAF's test coordinator, each on
// the file log device and the file term file in its own temp directory:
// commits, then every host restarts from nothing but its directory and the
// committed writes are readable again; a deposed primary's uncommitted suffix
// is cut from its files and stays gone after a restart.
//
// The devices complete syncs on their writer threads. So that the hosts still
// run deterministically on the coordinator, each device sits behind a wrapper
// that holds completions until the test thread delivers them between
// scheduler steps (after waiting for every sync in flight): the hosts see them
// as ordinary events, in an order fixed by the test.
#include "actors/replication/record_codec.hpp"
#include "actors/replication/replica_host.hpp"
#include "actors/replication/replica_inspect.hpp"
#include "storage/file_term_file.hpp"
#include "storage/inspect.hpp"
#include "storage/wal_log_device.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"
#include "tests/support/temp_dir.hpp"

#include <condition_variable>
#include <mutex>

using namespace conclave::replication;
using namespace std::chrono_literals;
using conclave::store::log_device;
using conclave::testing::ask;
namespace fs = std::filesystem;
namespace store = conclave::store;

namespace {

class held_completions_device final : public log_device {
public:
  explicit held_completions_device(std::shared_ptr<log_device> inner)
      : inner_(std::move(inner)) {}

  ~held_completions_device() override {
    inner_.reset(); // its last completions land here, still alive
  }

  store::result<void> append(const store::log_record& r) override {
    return inner_->append(r);
  }
  void sync(sync_callback done) override {
    {
      std::lock_guard<std::mutex> g{m_};
      ++outstanding_;
    }
    inner_->sync([this, done = std::move(done)](store::result<lsn> r) {
      std::lock_guard<std::mutex> g{m_};
      ready_.emplace_back(done, r);
      --outstanding_;
      cv_.notify_all();
    });
  }
  store::result<void> truncate_after(lsn at) override {
    return inner_->truncate_after(at);
  }
  store::result<void> checkpoint(std::string image, lsn at) override {
    return inner_->checkpoint(std::move(image), at);
  }
  store::result<recovered> recover() override { return inner_->recover(); }

  /// Waits for every sync in flight, then runs their completions on this
  /// thread. Returns how many ran.
  size_t deliver() {
    std::vector<std::pair<sync_callback, store::result<lsn>>> ready;
    {
      std::unique_lock<std::mutex> lk{m_};
      cv_.wait(lk, [&] { return outstanding_ == 0; });
      ready.swap(ready_);
    }
    for (auto& [done, r] : ready)
      done(r);
    return ready.size();
  }

private:
  std::shared_ptr<log_device> inner_;
  std::mutex m_;
  std::condition_variable cv_;
  size_t outstanding_ = 0;
  std::vector<std::pair<sync_callback, store::result<lsn>>> ready_;
};

class replica_restart_test : public conclave::testing::coordinator_fixture {
protected:
  struct replica {
    node_id id;
    fs::path dir;
    std::shared_ptr<held_completions_device> device;
    std::shared_ptr<term_file> terms;
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
      r.dir = dirs.path() / ("node-" + std::to_string(i));
      r.transport = std::make_shared<actor_transport>();
      rs.push_back(r);
    }
    for (size_t i = 0; i < rs.size(); ++i)
      start(i);
  }

  void TearDown() override {
    for (auto& r : rs)
      if (r.host)
        caf::anon_send_exit(r.host, caf::exit_reason::kill);
    run();
    // Completions hold actor handles: gone before the actor system is.
    for (auto& r : rs) {
      if (r.device)
        r.device->deliver();
      r.device.reset();
      r.terms.reset();
    }
    coordinator_fixture::TearDown();
  }

  std::vector<node_id> members() const {
    std::vector<node_id> out;
    for (auto& r : rs)
      out.push_back(r.id);
    return out;
  }

  /// Opens replica i's device and term file from its directory and spawns
  /// its host; the peers learn the new handle.
  void start(size_t i) {
    auto dev = conclave::storage::open_replica_log(rs[i].dir);
    ASSERT_TRUE(dev) << dev.error().message();
    auto terms = conclave::storage::open_term_file(rs[i].dir);
    ASSERT_TRUE(terms) << terms.error().message();
    rs[i].device = std::make_shared<held_completions_device>(std::move(dev.value()));
    rs[i].terms = std::move(terms.value());
    replica_host_options o;
    o.self = rs[i].id;
    o.members = members();
    o.device = rs[i].device;
    o.terms = rs[i].terms;
    o.transport = rs[i].transport;
    rs[i].host = track(spawn_replica_host(sys(), o));
    for (auto& r : rs)
      r.transport->set_peer(rs[i].id, rs[i].host);
  }

  /// Stops replica i's host and closes its files: what it keeps is what is
  /// in its directory.
  void stop(size_t i) {
    caf::anon_send_exit(rs[i].host, caf::exit_reason::kill);
    run();
    rs[i].device->deliver(); // to a dead actor: dropped
    rs[i].host = caf::actor{};
    rs[i].device.reset();
    rs[i].terms.reset();
  }

  void restart(size_t i) {
    stop(i);
    start(i);
  }

  /// Runs every job, delivering held sync completions until none is left.
  void settle() {
    for (;;) {
      run();
      size_t n = 0;
      for (auto& r : rs)
        if (r.device)
          n += r.device->deliver();
      if (n == 0)
        return;
    }
  }

  bool wait_until(const std::function<bool()>& pred, caf::timespan limit) {
    settle();
    for (caf::timespan t{0}; !pred(); t += 1ms) {
      if (t >= limit)
        return false;
      sched().advance_time(1ms);
      settle();
    }
    return true;
  }

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

  void make_primary(size_t i, uint64_t epoch) {
    auto ok = ask<bool>(sys(), rs[i].host, become_primary_msg{term{epoch, rs[i].id, 0}});
    settle();
    ASSERT_TRUE(ok->value && *ok->value);
    ASSERT_TRUE(wait_until([&] { return status(i).serving; }, 500ms));
  }

  std::shared_ptr<conclave::testing::reply<txn_result>>
  put(size_t i, const std::string& k, const std::string& v) {
    txn_request req;
    req.ops.push_back(txn_op{"d", k, v, op_kind::put});
    return ask<txn_result>(sys(), rs[i].host, req);
  }

  read_result read(size_t i, const std::string& k) {
    auto r = ask<read_result>(sys(), rs[i].host, read_request{"d", k});
    run();
    EXPECT_TRUE(r->done && r->value);
    return r->value ? *r->value : read_result{};
  }

  conclave::test::temp_dir dirs{"replica-restart"};
  std::vector<replica> rs;
};

} // namespace

TEST_F(replica_restart_test, committed_writes_are_readable_after_every_host_restarts) {
  make_primary(2, 1);
  std::vector<std::shared_ptr<conclave::testing::reply<txn_result>>> acks;
  for (int i = 0; i < 20; ++i)
    acks.push_back(put(2, "k" + std::to_string(i), "v" + std::to_string(i)));
  ASSERT_TRUE(wait_until([&] { return conclave::all_done(acks); }, 1s));
  for (auto& a : acks)
    ASSERT_EQ(a->value->code, errc::ok);
  std::vector<replica_status> before;
  for (size_t i = 0; i < rs.size(); ++i)
    before.push_back(status(i));
  // Every host stops at once; each comes back from its directory alone.
  for (size_t i = 0; i < rs.size(); ++i)
    stop(i);
  // What `conclave store check` finds there first: read with the replica's
  // rules, each directory is clean and recovers what the host had; read as a
  // store's own (its records are replication entries), it is not.
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_TRUE(is_replica_dir(rs[i].dir)) << i;
    replica_replay_rules rules;
    auto c = store::check_data_dir(rs[i].dir, rules);
    ASSERT_TRUE(c) << i;
    EXPECT_TRUE(c.value().clean()) << i << ": " << c.value().problem;
    EXPECT_EQ(c.value().recovered, before[i].last) << i;
    ASSERT_EQ(c.value().collections.size(), 1u) << i;
    EXPECT_EQ(c.value().collections[0].name, "d");
    EXPECT_EQ(c.value().collections[0].items, 20u) << i;
    auto as_store = store::check_data_dir(rs[i].dir);
    ASSERT_TRUE(as_store);
    EXPECT_FALSE(as_store.value().recoverable) << i;
  }
  for (size_t i = 0; i < rs.size(); ++i)
    start(i);
  for (size_t i = 0; i < rs.size(); ++i) {
    auto s = status(i);
    EXPECT_FALSE(s.failed) << i;
    EXPECT_EQ(s.promised, (term{1, rs[2].id, 0})) << i; // from the term file
    EXPECT_EQ(s.last, before[i].last) << i;             // from the device
    EXPECT_GE(s.last, acks.back()->value->at) << i;
  }
  // A new primary's sync phase commits the recovered log again.
  make_primary(0, 2);
  for (int i = 0; i < 20; ++i) {
    auto r = read(0, "k" + std::to_string(i));
    EXPECT_TRUE(r.found) << i;
    EXPECT_EQ(r.value, "v" + std::to_string(i));
  }
  auto c = put(0, "after", "x");
  ASSERT_TRUE(wait_until([&] { return c->done; }, 500ms));
  EXPECT_EQ(c->value->code, errc::ok);
  ASSERT_TRUE(wait_until([&] { return read(2, "after").found && read(1, "after").found; },
                         500ms));
  EXPECT_EQ(read(2, "k19").value, "v19");
  EXPECT_EQ(status(1).promised, (term{2, rs[0].id, 0}));
}

TEST_F(replica_restart_test,
       a_deposed_primarys_uncommitted_suffix_stays_cut_after_restart) {
  make_primary(2, 1);
  auto a = put(2, "a", "1");
  ASSERT_TRUE(wait_until([&] { return a->done; }, 500ms));
  // Replica 2 is cut off: its next transaction is durable only on itself.
  set_links(2, false);
  auto lost = put(2, "lost", "x");
  wait_until([] { return false; }, 50ms);
  ASSERT_FALSE(lost->done);
  auto suffix_end = status(2).durable;
  EXPECT_GT(suffix_end, a->value->at);
  make_primary(0, 2);
  auto b = put(0, "b", "2");
  ASSERT_TRUE(wait_until([&] { return b->done; }, 500ms));
  set_links(2, true);
  ASSERT_TRUE(wait_until([&] { return status(2).applied >= b->value->at; }, 1s));
  ASSERT_TRUE(lost->done && lost->value);
  EXPECT_EQ(lost->value->code, errc::primary_changed);
  EXPECT_FALSE(read(2, "lost").found);
  // The cut suffix went to log/truncated; the log itself holds the new
  // primary's records only.
  EXPECT_FALSE(fs::is_empty(rs[2].dir / "log" / "truncated"));
  restart(2);
  auto s = status(2);
  EXPECT_FALSE(s.failed);
  EXPECT_EQ(s.promised, (term{2, rs[0].id, 0}));
  ASSERT_TRUE(wait_until([&] { return read(2, "b").found; }, 500ms));
  EXPECT_FALSE(read(2, "lost").found);
  // Every record on its device is the new primary's (same lsn, same bytes).
  stop(2);
  stop(0);
  auto d2 = conclave::storage::open_replica_log(rs[2].dir).value()->recover().value();
  auto d0 = conclave::storage::open_replica_log(rs[0].dir).value()->recover().value();
  ASSERT_LE(d2.records.size(), d0.records.size());
  for (size_t k = 0; k < d2.records.size(); ++k) {
    auto e2 = from_log_record(d2.records[k]);
    auto e0 = from_log_record(d0.records[k]);
    ASSERT_TRUE(e2 && e0);
    EXPECT_EQ(e2->t, e0->t) << k;
    EXPECT_EQ(e2->payload, e0->payload) << k;
  }
  start(0);
  start(2);
}
