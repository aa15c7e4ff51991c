#include "protocols/workflow/lifecycle.hpp"

#include "protocols/workflow/recovery.hpp"

namespace conclave::workflow {

using S = step_state;

bool legal_step_transition(step_state from, step_state to) {
  switch (from) {
  case S::pending:
    return to == S::processing || to == S::cancelled;
  case S::processing:
    return to == S::processing || to == S::processed || to == S::error || to == S::pending
           || to == S::cancelled;
  case S::processed:
    return to == S::compensating;
  case S::compensating:
    return to == S::compensating || to == S::compensated || to == S::error;
  case S::error:
    return to == S::pending || to == S::compensating;
  case S::cancelled:
    return to == S::pending;
  case S::compensated:
    return false;
  }
  return false;
}

bool legal_job_transition(job_state from, job_state to) {
  switch (from) {
  case S::pending:
    return to == S::processing || to == S::cancelled || to == S::compensating;
  case S::processing:
    return to == S::processed || to == S::error || to == S::compensating
           || to == S::cancelled;
  case S::compensating:
    return to == S::compensated || to == S::error;
  case S::error:
  case S::cancelled:
    return to == S::pending || to == S::compensating;
  case S::processed:
  case S::compensated:
    return false;
  }
  return false;
}

namespace {

/// An operation in progress on a copy of the view; commit() publishes it.
class txn {
public:
  txn(job_view& v, timestamp now) : target_(v), work_(v), now_(now) {}

  job_view& view() { return work_; }
  job_record& job() { return work_.job; }
  step_record& step(step_index s) { return work_.steps[s.value]; }
  bool has_step(step_index s) const { return s.value < work_.steps.size(); }
  timestamp now() const { return now_; }
  effects& out() { return out_; }

  void set_step(step_record& s, step_state to) {
    if (s.state != to && !legal_step_transition(s.state, to))
      illegal_ = true;
    s.state = to;
    s.updated = now_;
  }

  void set_job(job_state to) {
    if (work_.job.state != to && !legal_job_transition(work_.job.state, to))
      illegal_ = true;
    work_.job.state = to;
    work_.job.updated = now_;
  }

  void event(event_kind k, step_index s, workflow::attempt a, std::string detail = {}) {
    job_event e;
    e.job = work_.job.id;
    e.seq = work_.job.next_event++;
    e.kind = k;
    e.step = s;
    e.attempt = a;
    e.at = now_;
    e.detail = std::move(detail);
    out_.events.push_back(std::move(e));
  }

  result<effects> commit() {
    if (illegal_)
      return errc::illegal_transition;
    target_ = std::move(work_);
    return std::move(out_);
  }

private:
  job_view& target_;
  job_view work_;
  timestamp now_;
  effects out_;
  bool illegal_ = false;
};

void unlock(step_record& s) {
  s.locked_by = {};
  s.agent = 0;
  s.complete_by.reset();
}

std::string describe(const step_outcome& o) {
  if (o.error_kind.empty())
    return o.message;
  if (o.message.empty())
    return o.error_kind;
  return o.error_kind + ": " + o.message;
}

/// Every not yet started step of the job is cancelled (the job ends early).
void cancel_rest(txn& t) {
  for (auto& s : t.view().steps)
    if (s.state == S::pending)
      t.set_step(s, S::cancelled);
}

/// Puts completed steps that declare compensation into compensating.
void start_compensation(txn& t, step_index at, const std::string& why) {
  cancel_rest(t);
  for (auto i : compensation_order(t.view())) {
    auto& s = t.step(i);
    t.set_step(s, S::compensating);
    s.not_before = timestamp{0};
  }
  t.set_job(S::compensating);
  t.event(event_kind::compensating, at, {}, why);
}

/// The step failed for good: the job compensates, or fails for an operator.
void fail_step(txn& t, step_record& s, const std::string& why) {
  bool undoing = s.state == S::compensating;
  unlock(s);
  s.last_error = why;
  t.set_step(s, S::error);
  if (undoing) {
    t.job().last_error =
        "compensation of step " + std::to_string(s.index.value) + " failed: " + why;
    t.set_job(S::error);
    t.event(event_kind::compensation_failed, s.index, s.attempt,
            "operator: fix the cause, then resubmit to resume the compensation (" + why
                + ")");
    return;
  }
  t.event(event_kind::step_failed, s.index, s.attempt, why);
  t.job().last_error = "step " + std::to_string(s.index.value) + " failed: " + why;
  if (can_compensate(t.view())) {
    start_compensation(t, s.index, why);
    return;
  }
  cancel_rest(t);
  t.set_job(S::error);
  t.event(event_kind::failed, s.index, s.attempt,
          "operator: fix the cause, then resubmit (" + why + ")");
}

/// After a compensation completed: the next one, or the job is compensated.
void after_compensation(txn& t, step_index done) {
  for (auto& s : t.view().steps)
    if (s.state == S::compensating)
      return;
  t.set_job(S::compensated);
  t.event(event_kind::compensated, done, {});
}

bool running(const step_record& s) {
  return (s.state == S::processing || s.state == S::compensating) && !s.locked_by.empty();
}

dispatch make_dispatch(const job_view& v, const step_record& s) {
  dispatch d;
  d.job = v.job.id;
  d.step = s.index;
  d.attempt = s.attempt;
  d.compensation = s.state == S::compensating;
  const auto& spec = s.spec;
  d.agent_kind = d.compensation ? spec.compensation->agent_kind : spec.agent_kind;
  d.payload = d.compensation ? spec.compensation->payload : spec.payload;
  d.deadline = *s.complete_by;
  d.idempotency_key = idempotency_key(v.job.id, s.index, d.compensation);
  d.retry = spec.retry;
  return d;
}

/// Locks step `s` for `by` under a new attempt.
void lock(txn& t, step_record& s, scheduler_ref by) {
  s.locked_by = by;
  s.agent = 0; // the host names the agent it dispatches to
  s.complete_by = t.now() + s.spec.timeout;
  s.attempt.value += 1;
  if (s.state != S::compensating)
    t.set_step(s, S::processing);
  s.updated = t.now();
  if (t.job().state == S::pending)
    t.set_job(S::processing);
  t.event(event_kind::step_started, s.index, s.attempt,
          s.state == S::compensating ? "compensation" : "");
  t.out().dispatched = make_dispatch(t.view(), s);
}

} // namespace

job_view make_job(const job_spec& spec, timestamp now, effects& out) {
  job_view v;
  v.job.id = spec.id;
  v.job.step_count = static_cast<uint32_t>(spec.steps.size());
  v.job.failure_threshold = spec.failure_threshold;
  v.job.recovery_backoff = spec.recovery_backoff;
  v.job.created = v.job.updated = now;
  for (uint32_t i = 0; i < spec.steps.size(); ++i) {
    step_record s;
    s.job = spec.id;
    s.index = step_index{i};
    s.spec = spec.steps[i];
    s.created = s.updated = now;
    v.steps.push_back(std::move(s));
  }
  job_event e;
  e.job = spec.id;
  e.seq = v.job.next_event++;
  e.kind = event_kind::received;
  e.at = now;
  out.events.push_back(std::move(e));
  return v;
}

std::optional<step_index> claimable_step(const job_view& v, timestamp now) {
  auto free_and_due = [now](const step_record& s) {
    return s.locked_by.empty() && s.not_before <= now;
  };
  switch (v.job.state) {
  case S::pending:
  case S::processing: {
    if (v.job.current.value >= v.steps.size())
      return std::nullopt;
    auto& s = v.steps[v.job.current.value];
    if (s.state == S::pending && free_and_due(s))
      return s.index;
    return std::nullopt;
  }
  case S::compensating:
    for (auto i : compensation_order(v)) {
      auto& s = v.steps[i.value];
      if (s.state != S::compensating)
        continue;
      if (free_and_due(s))
        return s.index;
      return std::nullopt; // one at a time, in order
    }
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

result<effects> claim(job_view& v, scheduler_ref by, timestamp now) {
  if (by.empty())
    return errc::bad_argument;
  auto i = claimable_step(v, now);
  if (!i)
    return errc::not_claimable;
  txn t{v, now};
  lock(t, t.step(*i), by);
  return t.commit();
}

result<effects> resume(job_view& v, step_index i, scheduler_ref by, timestamp now) {
  if (by.empty() || i.value >= v.steps.size())
    return errc::bad_argument;
  auto& cur = v.steps[i.value];
  if (!running(cur) || cur.locked_by.instance != by.instance
      || !(cur.locked_by.incarnation < by.incarnation))
    return errc::not_claimable;
  txn t{v, now};
  lock(t, t.step(i), by);
  return t.commit();
}

result<effects> complete(job_view& v, step_index i, workflow::attempt a,
                         const step_outcome& o, timestamp now) {
  if (i.value >= v.steps.size())
    return errc::bad_argument;
  auto& cur = v.steps[i.value];
  if (!running(cur) || cur.attempt != a) {
    effects e;
    e.stale = true;
    return e;
  }
  if (!o.ok && o.kind == failure_kind::transient)
    return recover(v, i, a, recovery_cause::failure, now);
  txn t{v, now};
  auto& s = t.step(i);
  if (!o.ok) {
    fail_step(t, s, describe(o));
    return t.commit();
  }
  bool undoing = s.state == S::compensating;
  unlock(s);
  if (undoing) {
    t.set_step(s, S::compensated);
    t.event(event_kind::step_completed, i, a, "compensation");
    after_compensation(t, i);
    return t.commit();
  }
  t.set_step(s, S::processed);
  s.completed_seq = ++t.job().completions;
  t.event(event_kind::step_completed, i, a);
  t.job().current.value = i.value + 1;
  t.job().updated = now;
  if (t.job().current.value >= t.job().step_count) {
    t.set_job(S::processed);
    t.event(event_kind::completed, i, a);
  }
  return t.commit();
}

result<effects> recover(job_view& v, step_index i, workflow::attempt a,
                        recovery_cause cause, timestamp now, bool unsafe_ignore_fence) {
  if (i.value >= v.steps.size())
    return errc::bad_argument;
  auto& cur = v.steps[i.value];
  if (!unsafe_ignore_fence && (!running(cur) || cur.attempt != a)) {
    effects e;
    e.stale = true;
    return e;
  }
  if (cause == recovery_cause::deadline && cur.complete_by && *cur.complete_by > now)
    return errc::wrong_state;
  auto d = decide_recovery(v, cur, now);
  txn t{v, now};
  auto& s = t.step(i);
  bool undoing = s.state == S::compensating;
  (undoing ? s.compensation_failures : s.failure_count) = d.failure_count;
  auto why = std::string{to_string(cause)} + " (attempt " + std::to_string(a.value)
             + ", failure " + std::to_string(d.failure_count) + " of "
             + std::to_string(t.job().failure_threshold) + ")";
  if (d.action == recovery_action::retry) {
    unlock(s);
    s.not_before = d.not_before;
    s.last_error = why;
    t.set_step(s, undoing ? S::compensating : S::pending);
    t.event(event_kind::retrying, i, a, why);
    return t.commit();
  }
  fail_step(t, s, "failure threshold reached: " + why);
  return t.commit();
}

result<effects> cancel(job_view& v, timestamp now) {
  if (v.job.state != S::pending && v.job.state != S::processing)
    return errc::wrong_state;
  txn t{v, now};
  for (auto& s : t.view().steps) {
    if (s.state == S::processing) {
      unlock(s);
      t.set_step(s, S::cancelled);
    }
  }
  t.job().last_error = "cancelled";
  t.event(event_kind::cancelled, t.job().current, {});
  if (can_compensate(t.view())) {
    start_compensation(t, t.job().current, "cancelled");
    return t.commit();
  }
  cancel_rest(t);
  t.set_job(S::cancelled);
  return t.commit();
}

result<effects> resubmit(job_view& v, timestamp now) {
  if (v.job.state != S::error && v.job.state != S::cancelled)
    return errc::wrong_state;
  txn t{v, now};
  t.job().last_error.clear();
  // A compensation that failed resumes where it stopped.
  bool undo_failed = false;
  for (auto& s : t.view().steps)
    if (s.state == S::error && s.completed_seq > 0)
      undo_failed = true;
  if (undo_failed) {
    for (auto& s : t.view().steps) {
      if (s.state == S::error && s.completed_seq > 0) {
        s.compensation_failures = 0;
        s.not_before = timestamp{0};
        t.set_step(s, S::compensating);
      }
    }
    t.set_job(S::compensating);
    t.event(event_kind::resubmitted, t.job().current, {}, "compensation resumes");
    return t.commit();
  }
  std::optional<step_index> first;
  for (auto& s : t.view().steps) {
    if (s.state == S::error || s.state == S::cancelled) {
      s.failure_count = 0;
      s.not_before = timestamp{0};
      t.set_step(s, S::pending);
      if (!first)
        first = s.index;
    }
  }
  if (!first)
    return errc::wrong_state;
  t.job().current = *first;
  t.set_job(S::pending);
  t.event(event_kind::resubmitted, *first, {});
  return t.commit();
}

} // namespace conclave::workflow
