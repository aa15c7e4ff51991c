// The workflow actors' store on a replica set: three replica hosts on CAF's
// test coordinator, the replication client, and the adapter. Checked: the
// store protocol's answers (reads, writes, conflicts as lock_timeout, batch
// checks, groups), enumerate against a model over random ranges, and whole
// workflows (two schedulers competing for the same jobs, a supervisor, the
// client) that finish every job with one effect per idempotency key, across
// a failover of the primary.
#include "actors/workflow/replicated_store.hpp"

#include "actors/replication/client.hpp"
#include "actors/workflow/agent.hpp"
#include "actors/workflow/client.hpp"
#include "actors/workflow/scheduler.hpp"
#include "actors/workflow/supervisor.hpp"
#include "actors/workflow/test_service.hpp"
#include "protocols/store/batch.hpp"
#include "tests/support/leadership_events.hpp"
#include "tests/support/replica_set_fixture.hpp"
#include "tests/support/store_requests.hpp"

#include <caf/send.hpp>

#include <map>
#include <random>

namespace {

namespace rp = conclave::replication;
namespace st = conclave::store;
namespace wf = conclave::workflow;
namespace el = conclave::election;
using namespace std::chrono_literals;
using conclave::testing::ask;

class replicated_store_test : public rp::testing::replica_set_fixture {
protected:
  void configure(caf::actor_system_config& cfg) override {
    replica_set_fixture::configure(cfg);
    st::add_store_types(cfg);
    wf::add_workflow_types(cfg);
    cfg.add_message_types<caf::id_block::conclave_election>();
  }

  void SetUp() override {
    replica_set_fixture::SetUp();
    make_primary(0, 1);
    rp::client_options o;
    o.members = members();
    o.lookup = [this](rp::node_id id) -> caf::actor {
      for (auto& r : rs)
        if (r.id == id && !down.count(id.value))
          return r.host;
      return {};
    };
    o.attempt_timeout = 100ms;
    o.deadline = 2s;
    o.session_id = "workflow-test";
    repl = track(rp::spawn_client(sys(), o));
    wf::replicated_store_options so;
    so.client = repl;
    so.request_timeout = 3s;
    so.page = 4; // small pages: every scan pages
    store = track(wf::spawn_replicated_store(sys(), so));
  }

  st::txn_id begin() {
    auto t = ask<st::txn_id>(sys(), store, conclave::store_atoms::begin_atom_v);
    run();
    EXPECT_TRUE(t->value);
    return t->value ? *t->value : st::txn_id{};
  }

  static st::op_request op(st::txn_id t, st::operation o, std::string c, std::string k,
                           std::string v = {}) {
    return conclave::test::dictionary_request(t, o, std::move(k), std::move(v), {},
                                              std::move(c));
  }

  /// Sends and waits (virtual time) for an answer.
  template <class T, class... Ts>
  std::shared_ptr<conclave::testing::reply<T>> call(Ts&&... xs) {
    auto r = ask<T>(sys(), store, std::forward<Ts>(xs)...);
    EXPECT_TRUE(advance_until([&] { return r->done; }, 3s));
    return r;
  }

  std::optional<std::string> committed(const std::string& c, const std::string& k) {
    auto r = call<st::op_result>(op({}, st::operation::try_get, c, k), uint32_t{0});
    EXPECT_TRUE(r->value) << caf::to_string(r->error);
    if (!r->value || !r->value->found)
      return std::nullopt;
    return r->value->value;
  }

  bool put_committed(const std::string& c, const std::string& k, const std::string& v) {
    auto t = begin();
    auto w =
        call<st::op_result>(op(t, st::operation::add_or_update, c, k, v), uint32_t{0});
    auto lsn = call<uint64_t>(conclave::store_atoms::commit_atom_v, t);
    return w->value && lsn->value && *lsn->value > 0;
  }

  std::set<uint64_t> down;
  caf::actor repl;
  st::store_actor store;
};

TEST_F(replicated_store_test,
       a_transaction_reads_its_own_writes_and_commits_them_at_once) {
  auto t = begin();
  auto a = call<st::op_result>(op(t, st::operation::try_get, "c", "k"), uint32_t{0});
  ASSERT_TRUE(a->value);
  EXPECT_FALSE(a->value->found);
  call<st::op_result>(op(t, st::operation::add_or_update, "c", "k", "v1"), uint32_t{0});
  auto b = call<st::op_result>(op(t, st::operation::try_get, "c", "k"), uint32_t{0});
  ASSERT_TRUE(b->value);
  EXPECT_TRUE(b->value->found);
  EXPECT_EQ(b->value->value, "v1");
  EXPECT_EQ(committed("c", "k"), std::nullopt); // not before commit
  auto lsn = call<uint64_t>(conclave::store_atoms::commit_atom_v, t);
  ASSERT_TRUE(lsn->value) << caf::to_string(lsn->error);
  EXPECT_GT(*lsn->value, 0u);
  EXPECT_EQ(committed("c", "k"), "v1");
  // Every replica has it.
  advance(50ms);
  for (size_t i = 0; i < rs.size(); ++i) {
    auto r = ask<rp::read_result>(sys(), rs[i].host, rp::read_request{"c", "k"});
    run();
    ASSERT_TRUE(r->value);
    EXPECT_EQ(r->value->value, "v1") << "replica " << i;
  }
}

TEST_F(replicated_store_test, the_second_of_two_writers_of_a_key_read_by_both_conflicts) {
  ASSERT_TRUE(put_committed("c", "k", "0"));
  auto t1 = begin();
  auto t2 = begin();
  for (auto t : {t1, t2})
    call<st::op_result>(op(t, st::operation::try_get, "c", "k"), uint32_t{0});
  call<st::op_result>(op(t1, st::operation::add_or_update, "c", "k", "1"), uint32_t{0});
  call<st::op_result>(op(t2, st::operation::add_or_update, "c", "k", "2"), uint32_t{0});
  auto c1 = call<uint64_t>(conclave::store_atoms::commit_atom_v, t1);
  auto c2 = call<uint64_t>(conclave::store_atoms::commit_atom_v, t2);
  EXPECT_TRUE(c1->value);
  ASSERT_FALSE(c2->value);
  EXPECT_EQ(st::to_errc(c2->error), st::errc::lock_timeout);
  EXPECT_EQ(committed("c", "k"), "1");
  // A transaction that is gone: unknown.
  auto again = call<uint64_t>(conclave::store_atoms::commit_atom_v, t2);
  EXPECT_EQ(st::to_errc(again->error), st::errc::unknown_transaction);
}

TEST_F(replicated_store_test, aborted_transactions_write_nothing) {
  auto t = begin();
  call<st::op_result>(op(t, st::operation::add_or_update, "c", "gone", "x"), uint32_t{0});
  auto a = call<bool>(conclave::store_atoms::abort_atom_v, t);
  ASSERT_TRUE(a->value);
  EXPECT_TRUE(*a->value);
  EXPECT_EQ(committed("c", "gone"), std::nullopt);
}

TEST_F(replicated_store_test, batch_checks_fail_like_the_local_store_and_write_nothing) {
  ASSERT_TRUE(put_committed("c", "doc", "A"));
  st::op_batch b;
  b.checks.push_back({"c", "doc", st::check_kind::equals, "B"});
  b.ops.push_back(op({}, st::operation::add_or_update, "c", "other", "x"));
  b.commit = true;
  auto r = call<st::batch_result>(b, uint32_t{0});
  ASSERT_TRUE(r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->failed_check, 1u);
  EXPECT_EQ(committed("c", "other"), std::nullopt);
  // The same batch with the right value commits in one transaction.
  b.checks[0].value = "A";
  r = call<st::batch_result>(b, uint32_t{0});
  ASSERT_TRUE(r->value);
  EXPECT_EQ(r->value->failed_check, 0u);
  EXPECT_GT(r->value->lsn, 0u);
  EXPECT_EQ(committed("c", "other"), "x");
  // at_most (fencing tokens) is read before the commit.
  st::op_batch f;
  f.checks.push_back({"c", "doc", st::check_kind::at_most, "@"}); // "A" > "@"
  f.ops.push_back(op({}, st::operation::add_or_update, "c", "fenced", "x"));
  f.commit = true;
  r = call<st::batch_result>(f, uint32_t{0});
  ASSERT_TRUE(r->value);
  EXPECT_EQ(r->value->failed_check, 1u);
  EXPECT_EQ(committed("c", "fenced"), std::nullopt);
  f.checks[0].value = "B";
  r = call<st::batch_result>(f, uint32_t{0});
  ASSERT_TRUE(r->value);
  EXPECT_EQ(r->value->failed_check, 0u);
  EXPECT_EQ(committed("c", "fenced"), "x");
}

TEST_F(replicated_store_test,
       a_read_batch_left_open_then_a_write_batch_is_one_checked_commit) {
  ASSERT_TRUE(put_committed("c", "doc", "v1"));
  st::op_batch read;
  auto g = op({}, st::operation::try_get, "c", "doc");
  g.mode = st::read_mode::update;
  read.ops.push_back(g);
  auto r1 = call<st::batch_result>(read, uint32_t{0});
  ASSERT_TRUE(r1->value);
  EXPECT_EQ(r1->value->results.at(0).value, "v1");
  auto t = r1->value->txn;
  // Another writer changes the document meanwhile.
  ASSERT_TRUE(put_committed("c", "doc", "v2"));
  st::op_batch write;
  write.txn = t;
  write.ops.push_back(op({}, st::operation::add_or_update, "c", "doc", "v1+"));
  write.commit = true;
  auto r2 = call<st::batch_result>(write, uint32_t{0});
  ASSERT_FALSE(r2->value);
  EXPECT_EQ(st::to_errc(r2->error), st::errc::lock_timeout);
  EXPECT_EQ(committed("c", "doc"), "v2"); // no lost update
}

TEST_F(replicated_store_test,
       a_grouped_batch_leaves_out_only_the_group_whose_check_fails) {
  ASSERT_TRUE(put_committed("c", "a", "1"));
  ASSERT_TRUE(put_committed("c", "b", "1"));
  ASSERT_TRUE(put_committed("c", "c", "1"));
  st::op_batch b;
  for (auto k : {"a", "b", "c"}) {
    b.checks.push_back(
        {"c", k, st::check_kind::equals, k == std::string{"b"} ? "9" : "1"});
    b.ops.push_back(op({}, st::operation::add_or_update, "c", k, "2"));
    b.groups.push_back(st::batch_group{1, 1});
  }
  b.commit = true;
  auto r = call<st::batch_result>(b, uint32_t{0});
  ASSERT_TRUE(r->value) << caf::to_string(r->error);
  EXPECT_EQ(r->value->failed_groups, (std::vector<uint32_t>{1}));
  EXPECT_EQ(committed("c", "a"), "2");
  EXPECT_EQ(committed("c", "b"), "1");
  EXPECT_EQ(committed("c", "c"), "2");
}

TEST_F(replicated_store_test, enumerate_matches_a_model_over_random_ranges_and_limits) {
  std::mt19937_64 rng{7};
  std::map<std::string, std::string> model;
  auto random_key = [&] {
    std::string k;
    auto n = 1 + rng() % 4;
    for (size_t i = 0; i < n; ++i)
      k += static_cast<char>('a' + rng() % 3);
    return k;
  };
  st::op_batch fill;
  for (int i = 0; i < 40; ++i) {
    auto k = random_key();
    model[k] = std::to_string(i);
    fill.ops.push_back(op({}, st::operation::add_or_update, "e", k, std::to_string(i)));
  }
  fill.commit = true;
  auto f = call<st::batch_result>(fill, uint32_t{0});
  ASSERT_TRUE(f->value) << caf::to_string(f->error);
  for (int round = 0; round < 150; ++round) {
    auto q = op({}, st::operation::enumerate, "e", {});
    q.has_from = rng() % 4 != 0;
    if (q.has_from)
      q.from = random_key().substr(0, rng() % 3);
    q.has_to = rng() % 4 != 0;
    if (q.has_to)
      q.to = random_key();
    q.limit = static_cast<uint32_t>(rng() % 3 == 0 ? 0 : rng() % 7);
    std::vector<std::pair<std::string, std::string>> want;
    for (auto& [k, v] : model) {
      if (q.has_from && k < q.from)
        continue;
      if (q.has_to && k >= q.to)
        break;
      if (q.limit != 0 && want.size() == q.limit)
        break;
      want.emplace_back(k, v);
    }
    auto r = call<st::op_result>(q, uint32_t{0});
    ASSERT_TRUE(r->value) << caf::to_string(r->error);
    EXPECT_EQ(r->value->items, want)
        << "round " << round << " [" << q.from << ", " << q.to << ") limit " << q.limit;
  }
}

// -- whole workflows --------------------------------------------------------------

el::leadership_event leader_event(uint64_t epoch, uint64_t id) {
  return conclave::test::became_leader(epoch, id);
}

class replicated_workflow_test : public replicated_store_test {
protected:
  void SetUp() override {
    replicated_store_test::SetUp();
    service = std::make_shared<wf::test_service_state>();
    svc = track(wf::spawn_test_service(sys(), service));
    wf::client_options co;
    co.store = store;
    co.known_kinds = {"svc"};
    client = track(wf::spawn_client(sys(), co));
  }

  /// A scheduler with its own agent, as each node has.
  void add_node(uint64_t id, std::function<bool(const wf::job_id&)> mine = nullptr,
                wf::duration takeover = 200ms) {
    wf::agent_options ao;
    ao.id = id;
    ao.service = svc;
    ao.seed = id;
    auto a = track(wf::spawn_agent(sys(), ao));
    wf::scheduler_options so;
    so.self = wf::scheduler_ref{id, 1};
    so.store = store;
    so.agents = {wf::agent_entry{id, "svc", a}};
    so.claim_group = 1;
    so.claims_in_flight = 8;
    so.poll_interval = 5ms;
    so.mine = std::move(mine);
    so.takeover_after = takeover;
    track(wf::spawn_scheduler(sys(), so));
  }

  wf::job_spec spec(const std::string& id, size_t steps) {
    wf::job_spec s;
    s.id = wf::job_id{id};
    for (size_t i = 0; i < steps; ++i) {
      wf::step_spec x;
      x.agent_kind = "svc";
      x.payload = "p";
      x.timeout = 300ms;
      x.retry.max_attempts = 1;
      s.steps.push_back(x);
    }
    return s;
  }

  wf::job_state state_of(const std::string& id) {
    auto r = ask<wf::job_view>(sys(), client, caf::get_atom::value, wf::job_id{id});
    advance_until([&] { return r->done; }, 1s);
    return r->value ? r->value->job.state : wf::job_state::pending;
  }

  /// Whether jobs PREFIX0 .. PREFIX(n-1) all succeed within `limit`.
  bool all_processed(const std::string& prefix, int n, caf::timespan limit) {
    auto done = [&] {
      for (int i = 0; i < n; ++i)
        if (state_of(prefix + std::to_string(i)) != wf::job_state::processed)
          return false;
      return true;
    };
    return advance_until(done, limit, 5ms);
  }

  std::shared_ptr<wf::test_service_state> service;
  wf::service_actor svc;
  wf::client_actor client;
};

TEST_F(replicated_workflow_test,
       two_schedulers_competing_for_every_job_run_each_step_once) {
  service->deduplicate = false; // a second run of a step would be a second effect
  add_node(1);
  add_node(2);
  constexpr int jobs = 30;
  for (int i = 0; i < jobs; ++i)
    ask<wf::job_id>(sys(), client, conclave::workflow_atoms::submit_atom_v,
                    spec("j" + std::to_string(i), 3));
  ASSERT_TRUE(all_processed("j", jobs, 20s));
  EXPECT_EQ(service->effects.size(), size_t{jobs * 3});
  for (auto& [key, n] : service->effects)
    EXPECT_EQ(n, 1) << key;
}

TEST_F(replicated_workflow_test, every_job_finishes_across_a_failover_of_the_primary) {
  add_node(1);
  add_node(2);
  wf::supervisor_options so;
  so.store = store;
  so.scan_interval = 20ms;
  auto sup = track(wf::spawn_supervisor(sys(), so));
  caf::anon_send(sup, leader_event(1, 1));
  run();
  constexpr int jobs = 24;
  for (int i = 0; i < jobs; ++i) {
    auto r = ask<wf::job_id>(sys(), client, conclave::workflow_atoms::submit_atom_v,
                             spec("j" + std::to_string(i), 2));
    ASSERT_TRUE(advance_until([&] { return r->done; }, 3s));
    ASSERT_TRUE(r->value) << caf::to_string(r->error);
    if (i == jobs / 2) { // the primary dies mid-run; replica 2 takes over
      down.insert(1);
      crash(0);
      make_primary(1, 2);
    }
  }
  ASSERT_TRUE(all_processed("j", jobs, 20s));
  // The service de-duplicates by idempotency key: one effect per step, even
  // if a step whose answer was lost in the failover ran again.
  EXPECT_EQ(service->effects.size(), size_t{jobs * 2});
  for (auto& [key, n] : service->effects)
    EXPECT_EQ(n, 1) << key;
}

TEST_F(replicated_workflow_test, a_share_left_unclaimed_is_taken_over_after_the_delay) {
  // The only scheduler owns no share: it claims a job only once the job has
  // been ready for the takeover delay (its owner may be dead).
  add_node(
      1, [](const wf::job_id&) { return false; }, 500ms);
  auto r = ask<wf::job_id>(sys(), client, conclave::workflow_atoms::submit_atom_v,
                           spec("late", 1));
  ASSERT_TRUE(advance_until([&] { return r->done; }, 1s));
  ASSERT_TRUE(r->value) << caf::to_string(r->error);
  advance(400ms, 5ms);
  EXPECT_EQ(state_of("late"), wf::job_state::pending);
  EXPECT_TRUE(service->effects.empty());
  EXPECT_TRUE(advance_until([&] { return state_of("late") == wf::job_state::processed; },
                            1s, 5ms));
}

TEST_F(replicated_workflow_test, disjoint_shares_claim_at_once_and_each_step_once) {
  service->deduplicate = false;
  // Two schedulers splitting the jobs by the parity of their number: no job
  // waits for the takeover delay (10 s here).
  auto parity = [](const wf::job_id& j) { return (j.value.back() - '0') % 2; };
  add_node(
      1, [parity](const wf::job_id& j) { return parity(j) == 0; }, 10s);
  add_node(
      2, [parity](const wf::job_id& j) { return parity(j) == 1; }, 10s);
  constexpr int jobs = 20;
  for (int i = 0; i < jobs; ++i)
    ask<wf::job_id>(sys(), client, conclave::workflow_atoms::submit_atom_v,
                    spec("s" + std::to_string(i), 2));
  ASSERT_TRUE(all_processed("s", jobs, 5s));
  EXPECT_EQ(service->effects.size(), size_t{jobs * 2});
  for (auto& [key, n] : service->effects)
    EXPECT_EQ(n, 1) << key;
}

} // namespace
