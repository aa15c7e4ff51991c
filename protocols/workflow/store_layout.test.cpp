// The writes that move a job from one version to the next: its one document
// only when changed, events moved out of the document beyond job_doc_events,
// and the due, ready and state indexes kept in step.
#include "protocols/workflow/store_layout.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

using namespace conclave::workflow;
using namespace std::chrono_literals;

namespace {

job_view job() {
  job_spec s;
  s.id = job_id{"j"};
  step_spec st;
  st.agent_kind = "svc";
  st.timeout = 100ms;
  s.steps = {st, st};
  effects e;
  return make_job(s, timestamp{0}, e);
}

/// Applies writes to a map of (collection, key) -> value.
using fake_store = std::map<std::pair<std::string, std::string>, std::string>;

void apply_writes(fake_store& st, const std::vector<layout::write>& ws) {
  for (auto& w : ws) {
    if (w.remove)
      EXPECT_EQ(st.erase({w.collection, w.key}), 1u) << "removed a missing key";
    else
      st[{w.collection, w.key}] = w.value;
  }
}

size_t count(const fake_store& st, const std::string& collection) {
  size_t n = 0;
  for (auto& [k, v] : st)
    n += k.first == collection;
  return n;
}

} // namespace

TEST(store_layout, a_new_job_writes_one_document_ready_and_state_not_its_received_event) {
  effects e;
  job_spec s;
  s.id = job_id{"j"};
  step_spec st;
  st.agent_kind = "svc";
  s.steps = {st, st, st};
  auto v = make_job(s, timestamp{0}, e);
  fake_store store;
  apply_writes(store, layout::job_writes(std::nullopt, v, e));
  EXPECT_EQ(count(store, layout::jobs), 1u);
  EXPECT_EQ(count(store, layout::events), 0u); // derived from the job record
  EXPECT_EQ(count(store, layout::ready), 1u);
  EXPECT_EQ(count(store, layout::due), 0u);
  EXPECT_TRUE(
      store.count({layout::state, layout::state_key(job_state::pending, v.job.id)}));
  // The document holds the job and its three steps, and no event.
  auto doc = decode_doc(store.at({layout::jobs, "j"}));
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc.value().steps.size(), 3u);
  EXPECT_TRUE(doc.value().events.empty());
  EXPECT_TRUE(v.events.empty());
  EXPECT_EQ(encode_doc(doc.value()), encode_doc(v));
  // The ready entry names the kind of the claimable step: a scheduler with
  // no agent of it skips the job without reading its document.
  auto value = store.lower_bound({layout::ready, ""})->second;
  EXPECT_EQ(layout::ready_kind(value), std::optional<std::string_view>{"svc"});
  // The event the submission produced is the one derived from the record.
  ASSERT_EQ(e.events.size(), 1u);
  auto derived = layout::received_event(v.job);
  EXPECT_EQ(encode(derived), encode(e.events.front()));
}

TEST(store_layout, a_job_stored_in_version_1_is_rewritten_in_version_2_when_it_changes) {
  effects e;
  auto v = job();
  fake_store store;
  apply_writes(store, layout::job_writes(std::nullopt, v, e));
  // As a store written before compact documents holds it.
  auto& row = store.at({layout::jobs, "j"});
  row = encode_doc_v1(v);
  auto old = row;
  auto before = decode_doc(old);
  ASSERT_TRUE(before);
  auto after = before.value();
  auto c = claim(after, scheduler_ref{1, 1}, timestamp{5});
  ASSERT_TRUE(c);
  apply_writes(store, layout::job_writes(&before.value(), after, c.value(), &old));
  EXPECT_EQ(store.at({layout::jobs, "j"}), encode_doc(after));
  EXPECT_EQ(store.at({layout::jobs, "j"})[1], doc_version);
  // An unchanged job compared with its version 1 bytes is rewritten too (the
  // bytes differ), never mistaken for unchanged and never lost.
  auto same = before.value();
  auto ws = layout::job_writes(&before.value(), same, effects{}, &old);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].value, encode_doc(before.value()));
}

TEST(store_layout, the_ready_row_names_the_kind_of_the_claimable_step) {
  job_spec s;
  s.id = job_id{"order"};
  step_spec pay;
  pay.agent_kind = "payment";
  pay.compensation = compensation_spec{"refund", ""};
  step_spec ship;
  ship.agent_kind = "shipping";
  s.steps = {pay, ship};
  effects e;
  auto v = make_job(s, timestamp{0}, e);
  fake_store store;
  apply_writes(store, layout::job_writes(std::nullopt, v, e));
  auto kind_in_store = [&]() -> std::string {
    EXPECT_EQ(count(store, layout::ready), 1u);
    auto k = layout::ready_kind(store.lower_bound({layout::ready, ""})->second);
    return k ? std::string{*k} : "(none)";
  };
  EXPECT_EQ(kind_in_store(), "payment");
  auto step = [&](auto change) {
    auto before = v;
    auto r = change(v);
    ASSERT_TRUE(r);
    apply_writes(store, layout::job_writes(before, v, r.value()));
  };
  step([](job_view& x) { return claim(x, scheduler_ref{1, 1}, timestamp{1}); });
  step([](job_view& x) {
    return complete(x, step_index{0}, attempt{1}, step_outcome{}, timestamp{2});
  });
  EXPECT_EQ(kind_in_store(), "shipping");
  step([](job_view& x) { return claim(x, scheduler_ref{1, 1}, timestamp{3}); });
  step([](job_view& x) {
    step_outcome failed;
    failed.ok = false;
    failed.kind = failure_kind::permanent;
    return complete(x, step_index{1}, attempt{1}, failed, timestamp{4});
  });
  ASSERT_EQ(v.job.state, job_state::compensating);
  EXPECT_EQ(kind_in_store(), "refund"); // the compensation's kind
  // Rows written without a kind (before it was stored) name none: read the
  // document.
  EXPECT_FALSE(layout::ready_kind(""));
  EXPECT_FALSE(layout::ready_kind("3"));
}

TEST(store_layout, indexes_follow_the_lifecycle) {
  effects e0;
  auto v = job();
  fake_store store;
  apply_writes(store, layout::job_writes(std::nullopt, v, e0));
  auto before = v;
  auto c = claim(v, scheduler_ref{1, 1}, timestamp{0});
  ASSERT_TRUE(c);
  auto ws = layout::job_writes(before, v, c.value());
  apply_writes(store, ws);
  // Claimed: not ready any more, due at CompleteBy, the document rewritten
  // once with the step_started event in it.
  EXPECT_EQ(count(store, layout::ready), 0u);
  ASSERT_EQ(count(store, layout::due), 1u);
  EXPECT_TRUE(
      store.count({layout::due, due_key(timestamp{100ms}, v.job.id, step_index{0})}));
  size_t doc_writes = 0;
  for (auto& w : ws)
    doc_writes += w.collection == layout::jobs;
  EXPECT_EQ(doc_writes, 1u);
  EXPECT_EQ(count(store, layout::events), 0u);
  ASSERT_EQ(v.events.size(), 1u);
  EXPECT_EQ(v.events[0].kind, event_kind::step_started);
  EXPECT_EQ(store.at({layout::jobs, "j"}), encode_doc(v));
  EXPECT_TRUE(
      store.count({layout::state, layout::state_key(job_state::processing, v.job.id)}));
  EXPECT_EQ(count(store, layout::state), 1u);
  // Pending and processing share the active class: the claim wrote no row.
  size_t state_writes = 0;
  for (auto& w : ws)
    state_writes += w.collection == layout::state;
  EXPECT_EQ(state_writes, 0u);
  // Recovered with backoff: ready again at not_before, not due.
  v.job.recovery_backoff = 30ms;
  before = v;
  auto r = recover(v, step_index{0}, attempt{1}, recovery_cause::monitor, timestamp{5ms});
  ASSERT_TRUE(r);
  apply_writes(store, layout::job_writes(before, v, r.value()));
  EXPECT_EQ(count(store, layout::due), 0u);
  ASSERT_EQ(count(store, layout::ready), 1u);
  auto key = store.lower_bound({layout::ready, ""})->first.second;
  EXPECT_LT(layout::ready_bound(timestamp{34ms}), key);
  EXPECT_GT(layout::ready_bound(timestamp{35ms}), key);
  EXPECT_EQ(layout::decode_ready_key(key).value(), v.job.id);
}

TEST(store_layout, a_finished_job_leaves_no_index_entries_but_its_state) {
  effects e0;
  auto v = job();
  fake_store store;
  apply_writes(store, layout::job_writes(std::nullopt, v, e0));
  for (int i = 0; i < 2; ++i) {
    auto before = v;
    auto c = claim(v, scheduler_ref{1, 1}, timestamp{0});
    ASSERT_TRUE(c);
    apply_writes(store, layout::job_writes(before, v, c.value()));
    before = v;
    auto d = *c.value().dispatched;
    auto done = complete(v, d.step, d.attempt, step_outcome{}, timestamp{1ms});
    ASSERT_TRUE(done);
    apply_writes(store, layout::job_writes(before, v, done.value()));
  }
  EXPECT_EQ(count(store, layout::ready), 0u);
  EXPECT_EQ(count(store, layout::due), 0u);
  EXPECT_TRUE(
      store.count({layout::state, layout::state_key(job_state::processed, v.job.id)}));
  // 2 x (started, completed) + completed, all in the document; job() keeps
  // "received" to itself.
  EXPECT_EQ(count(store, layout::events), 0u);
  auto doc = decode_doc(store.at({layout::jobs, "j"}));
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc.value().events.size(), 5u);
  auto [from, to] = layout::state_range(job_state::processed);
  auto k = layout::state_key(job_state::processed, v.job.id);
  EXPECT_TRUE(from <= k && k < to);
}

TEST(store_layout, every_final_state_has_its_own_class_and_the_others_share_one) {
  job_id j{"j"};
  for (uint8_t s = 0; s < step_state_count; ++s) {
    auto st = static_cast<job_state>(s);
    auto [from, to] = layout::state_range(st);
    EXPECT_EQ(layout::class_is_exact(st), is_final(st)) << to_string(st);
    for (uint8_t o = 0; o < step_state_count; ++o) {
      auto other = static_cast<job_state>(o);
      auto k = layout::state_key(other, j);
      bool in_range = from <= k && k < to;
      EXPECT_EQ(in_range, st == other || (!is_final(st) && !is_final(other)))
          << to_string(st) << " / " << to_string(other);
      EXPECT_EQ(layout::decode_state_key(k).value(), j);
    }
  }
}

// Callers that hold the document's bytes as stored (the outcome's check, a
// claim's read) pass them: the document is rewritten exactly when its new
// encoding differs from those bytes, as it would be against encode_doc(before).
TEST(store_layout, stored_bytes_of_the_document_decide_whether_it_is_rewritten) {
  auto keys = [](const std::vector<layout::write>& ws) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& w : ws)
      out.emplace_back(w.collection, w.key);
    return out;
  };
  auto before = job();
  auto stored = encode_doc(before);
  auto v = before;
  auto c = claim(v, scheduler_ref{1, 1}, timestamp{0});
  ASSERT_TRUE(c);
  auto w = v; // claimed, events not appended yet
  auto plain = layout::job_writes(&before, w, c.value());
  auto x = v;
  EXPECT_EQ(keys(layout::job_writes(&before, x, c.value(), &stored)), keys(plain));
  // Nothing changed (a stale outcome): nothing is written, unless the store
  // holds other bytes for the document (say an older record version).
  auto same = before;
  EXPECT_TRUE(layout::job_writes(&before, same, effects{}, &stored).empty());
  std::string older = "older bytes";
  auto ws = layout::job_writes(&before, same, effects{}, &older);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].collection, layout::jobs);
  EXPECT_EQ(ws[0].value, stored);
}

namespace {

/// A pending one-step job cancelled and resubmitted until it has `n` events
/// besides "received" (seqs 2 .. n+1), its writes applied to `store`
/// change by change as the job store would.
job_view job_with_events(fake_store& store, size_t n) {
  auto v = job();
  effects e0;
  apply_writes(store, layout::job_writes(std::nullopt, v, e0));
  for (size_t made = 0; made < n; ++made) {
    auto before = v;
    auto e = v.job.state == job_state::cancelled ? resubmit(v, timestamp{1ms})
                                                 : cancel(v, timestamp{1ms});
    EXPECT_TRUE(e);
    EXPECT_EQ(e.value().events.size(), 1u);
    apply_writes(
        store, layout::job_writes(&before, v, e.value(), &store.at({layout::jobs, "j"})));
    EXPECT_EQ(store.at({layout::jobs, "j"}), encode_doc(v));
  }
  return v;
}

/// What the job store's events() reads: wf.events rows from `from` on, and
/// the document's events.
std::vector<uint64_t> seqs_from(const fake_store& store, uint64_t from) {
  std::vector<job_event> rows;
  auto first = store.lower_bound({layout::events, event_key(job_id{"j"}, from)});
  auto [lo, hi] = job_key_range(job_id{"j"});
  for (auto i = first;
       i != store.end() && i->first.first == layout::events && i->first.second < hi;
       ++i) {
    auto ev = decode_event(i->second);
    EXPECT_TRUE(ev);
    rows.push_back(ev.value());
  }
  auto doc = decode_doc(store.at({layout::jobs, "j"}));
  EXPECT_TRUE(doc);
  std::vector<uint64_t> out;
  for (auto& ev : layout::merge_events(std::move(rows), doc.value().events, from))
    out.push_back(ev.seq);
  return out;
}

} // namespace

// The document keeps the newest job_doc_events events; older ones move to
// wf.events in the change that pushes them out. Every event is in exactly one
// place, and a read from any `from` gets each once, in order, without gaps.
TEST(store_layout, events_beyond_the_document_move_to_rows_each_kept_once) {
  const size_t k = job_doc_events;
  for (size_t n : {k - 1, k, k + 1, 3 * k}) {
    fake_store store;
    auto v = job_with_events(store, n);
    EXPECT_EQ(v.events.size(), std::min(n, k)) << n;
    EXPECT_EQ(count(store, layout::events), n > k ? n - k : 0) << n;
    EXPECT_EQ(v.job.next_event, n + 2);
    for (uint64_t from : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3},
                          uint64_t{n / 2}, uint64_t{n - k + 1}, uint64_t{n - k + 2},
                          uint64_t{n}, uint64_t{n + 1}, uint64_t{n + 2}}) {
      if (from > n + 2)
        continue; // n - k + 1 wrapped round for n < k
      std::vector<uint64_t> want;
      for (uint64_t seq = std::max<uint64_t>(from, 2); seq <= n + 1; ++seq)
        want.push_back(seq);
      EXPECT_EQ(seqs_from(store, from), want) << "n " << n << " from " << from;
    }
  }
}

// Attack on the indexes: random jobs (1-3 steps, some compensating, threshold
// 2, with and without recovery backoff) driven through random lifecycle
// operations, each applied to a fake store as job_writes' diff from the
// version before. After every operation the index rows in the store must be
// exactly those a fresh write of every job's current version would make, and
// `list` must come out right: each job has one wf.state row, in the class of
// its state (its own for a final state, the shared active class otherwise).
TEST(store_layout, random_lifecycles_keep_every_index_exactly_in_step) {
  std::mt19937_64 rng{20261123};
  auto pick = [&](uint64_t n) { return rng() % n; };
  std::map<uint64_t, uint64_t> applied; // by kind of operation
  for (int round = 0; round < 40; ++round) {
    fake_store store;
    std::vector<job_view> jobs;
    timestamp now{0};
    for (int j = 0; j < 5; ++j) {
      job_spec s;
      s.id = job_id{"job-" + std::to_string(j)};
      s.failure_threshold = 2;
      s.recovery_backoff = pick(2) ? duration{10ms} : duration{0};
      auto steps = 1 + pick(3);
      for (uint64_t k = 0; k < steps; ++k) {
        step_spec st;
        st.agent_kind = "svc";
        st.timeout = 50ms;
        if (pick(2))
          st.compensation = compensation_spec{"undo", "u"};
        s.steps.push_back(st);
      }
      effects e;
      jobs.push_back(make_job(s, now, e));
      apply_writes(store, layout::job_writes(std::nullopt, jobs.back(), e));
    }
    for (int op = 0; op < 300; ++op) {
      now += duration{std::chrono::milliseconds{pick(30)}};
      auto& v = jobs[pick(jobs.size())];
      std::optional<step_index> running;
      for (auto& s : v.steps)
        if (!s.locked_by.empty())
          running = s.index;
      auto before = v;
      result<effects> e = errc::not_claimable;
      auto kind = pick(7);
      switch (kind) {
      case 0:
      case 1:
        e = claim(v, scheduler_ref{1 + pick(2), 1}, now);
        break;
      case 2:
      case 3:
        if (running) {
          step_outcome o;
          auto k = pick(4);
          o.ok = k < 2;
          o.kind = k == 2 ? failure_kind::transient : failure_kind::permanent;
          e = complete(v, *running, v.steps[running->value].attempt, o, now);
        }
        break;
      case 4:
        if (running)
          e = recover(v, *running, v.steps[running->value].attempt,
                      recovery_cause::monitor, now);
        break;
      case 5:
        e = cancel(v, now);
        break;
      case 6:
        e = resubmit(v, now);
        break;
      }
      if (!e) {
        v = before; // a refused operation changes nothing
        continue;
      }
      ++applied[kind];
      apply_writes(store, layout::job_writes(before, v, e.value()));
      // What a fresh write of every current version would hold.
      std::set<std::pair<std::string, std::string>> want, have;
      for (auto& job : jobs) {
        auto copy = job;
        copy.events.clear();
        for (auto& w : layout::job_writes(nullptr, copy, effects{}))
          if (w.collection != layout::jobs && w.collection != layout::events)
            want.insert({w.collection, w.key});
        EXPECT_EQ(store.at({layout::jobs, job.job.id.value}), encode_doc(job));
      }
      for (auto& [k, val] : store)
        if (k.first != layout::jobs && k.first != layout::events)
          have.insert(k);
      ASSERT_EQ(have, want) << "round " << round << " op " << op;
      // list: the class rows, filtered by the documents' states.
      for (uint8_t s = 0; s < step_state_count; ++s) {
        auto st = static_cast<job_state>(s);
        auto [from, to] = layout::state_range(st);
        std::set<std::string> listed, expected;
        for (auto i = store.lower_bound({layout::state, from});
             i != store.end() && i->first.first == layout::state && i->first.second < to;
             ++i) {
          auto id = layout::decode_state_key(i->first.second).value();
          auto doc = decode_doc(store.at({layout::jobs, id.value})).value();
          if (layout::class_is_exact(st) || doc.job.state == st)
            listed.insert(id.value);
        }
        for (auto& job : jobs)
          if (job.job.state == st)
            expected.insert(job.job.id.value);
        ASSERT_EQ(listed, expected) << to_string(st) << ", round " << round;
      }
    }
  }
  // The random walk applied every kind of operation many times.
  for (uint64_t k = 0; k < 7; ++k)
    EXPECT_GT(applied[k], 100u) << "operation " << k;
}

TEST(store_layout, agent_kinds_round_trip_sorted_one_per_line) {
  std::set<std::string> kinds{"sleep", "exec", "payment"};
  auto row = layout::encode_kinds(kinds);
  EXPECT_EQ(row, "exec\npayment\nsleep");
  EXPECT_EQ(layout::decode_kinds(row), kinds);
  EXPECT_TRUE(layout::decode_kinds("").empty());
  EXPECT_EQ(layout::decode_kinds("\n\nexec\n"), (std::set<std::string>{"exec"}));
}
