// The writes that move a job from one version to the next: records only when
// changed, and the due, ready and state indexes kept in step.
#include "protocols/workflow/store_layout.hpp"

#include <gtest/gtest.h>

#include <map>

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

TEST(store_layout, a_new_job_writes_records_ready_and_state_but_not_its_received_event) {
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
  EXPECT_EQ(count(store, layout::steps), 3u);
  EXPECT_EQ(count(store, layout::events), 0u); // derived from the job record
  EXPECT_EQ(count(store, layout::ready), 1u);
  EXPECT_EQ(count(store, layout::due), 0u);
  EXPECT_TRUE(
      store.count({layout::state, layout::state_key(job_state::pending, v.job.id)}));
  // The ready entry carries the step count (a read hint for claims).
  auto ready = store.lower_bound({layout::ready, ""});
  EXPECT_EQ(layout::ready_step_hint(ready->second), 3u);
  // The event the submission produced is the one derived from the record.
  ASSERT_EQ(e.events.size(), 1u);
  auto derived = layout::received_event(v.job);
  EXPECT_EQ(encode(derived), encode(e.events.front()));
}

TEST(store_layout, ready_hints_ignore_garbage) {
  EXPECT_EQ(layout::ready_step_hint(""), 0u);
  EXPECT_EQ(layout::ready_step_hint("5"), 5u);
  EXPECT_EQ(layout::ready_step_hint("x1"), 0u);
  EXPECT_EQ(layout::ready_step_hint("12345"), 0u);
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
  // Claimed: not ready any more, due at CompleteBy, only step 0 rewritten.
  EXPECT_EQ(count(store, layout::ready), 0u);
  ASSERT_EQ(count(store, layout::due), 1u);
  EXPECT_TRUE(
      store.count({layout::due, due_key(timestamp{100ms}, v.job.id, step_index{0})}));
  size_t step_writes = 0;
  for (auto& w : ws)
    step_writes += w.collection == layout::steps;
  EXPECT_EQ(step_writes, 1u);
  EXPECT_TRUE(
      store.count({layout::state, layout::state_key(job_state::processing, v.job.id)}));
  EXPECT_EQ(count(store, layout::state), 1u);
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
  // 2 x (started, completed) + completed; job() keeps "received" to itself.
  EXPECT_EQ(count(store, layout::events), 5u);
  auto [from, to] = layout::state_range(job_state::processed);
  auto k = layout::state_key(job_state::processed, v.job.id);
  EXPECT_TRUE(from <= k && k < to);
}

// Callers that hold the rows' bytes as stored (the outcome's checks, a
// claim's reads) pass them: a row is rewritten exactly when its new encoding
// differs from those bytes, as it would be against encode(before).
TEST(store_layout, stored_bytes_of_the_rows_decide_what_is_rewritten) {
  auto v = job();
  auto before = v;
  auto c = claim(v, scheduler_ref{1, 1}, timestamp{0});
  ASSERT_TRUE(c);
  layout::stored_rows rows;
  rows.job = encode(before.job);
  for (auto& s : before.steps)
    rows.steps.push_back(encode(s));
  auto keys = [](const std::vector<layout::write>& ws) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& w : ws)
      out.emplace_back(w.collection, w.key);
    return out;
  };
  auto plain = layout::job_writes(&before, v, c.value());
  EXPECT_EQ(keys(layout::job_writes(&before, v, c.value(), &rows)), keys(plain));
  // Step 1 did not change, but the store holds other bytes for it (say an
  // older record version): it is rewritten.
  rows.steps[1] = "older bytes";
  auto ws = layout::job_writes(&before, v, c.value(), &rows);
  size_t step_writes = 0;
  for (auto& w : ws)
    step_writes += w.collection == layout::steps;
  EXPECT_EQ(step_writes, 2u);
  EXPECT_EQ(ws.size(), plain.size() + 1);
}
