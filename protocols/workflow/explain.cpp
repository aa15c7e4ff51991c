#include "protocols/workflow/explain.hpp"

#include <cstdio>

namespace conclave::workflow {

const char* to_string(next_action a) noexcept {
  switch (a) {
  case next_action::none:
    return "none";
  case next_action::wait_backoff:
    return "wait_backoff";
  case next_action::await_claim:
    return "await_claim";
  case next_action::await_agent:
    return "await_agent";
  case next_action::overdue:
    return "overdue";
  case next_action::operator_action:
    return "operator";
  }
  return "unknown";
}

namespace {

/// The step a job waits on: locked or claimable-to-be in its phase.
const step_record* waiting_step(const job_view& v) {
  if (v.job.state == step_state::compensating) {
    for (auto i : compensation_order(v))
      if (v.steps[i.value].state == step_state::compensating)
        return &v.steps[i.value];
    return nullptr;
  }
  if (v.job.state == step_state::error) {
    for (auto& s : v.steps)
      if (s.state == step_state::error)
        return &s;
    return nullptr;
  }
  if (v.job.current.value < v.steps.size())
    return &v.steps[v.job.current.value];
  return nullptr;
}

std::string seconds(duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", std::chrono::duration<double>(d).count());
  return buf;
}

std::string relative(timestamp t, timestamp now) {
  if (t >= now)
    return "in " + seconds(t - now);
  return seconds(now - t) + " ago";
}

} // namespace

stuck_report explain(const job_view& v, timestamp now) {
  stuck_report r;
  r.job = v.job.id;
  r.state = v.job.state;
  r.failure_threshold = v.job.failure_threshold;
  auto* s = waiting_step(v);
  if (s) {
    r.step = s->index;
    r.current_state = s->state;
    r.compensation = s->state == step_state::compensating
                     || (s->state == step_state::error && s->completed_seq > 0);
    r.attempt = s->attempt;
    r.failure_count = r.compensation ? s->compensation_failures : s->failure_count;
    r.locked_by = s->locked_by;
    r.complete_by = s->complete_by;
    r.last_error = s->last_error;
  }
  if (r.last_error.empty())
    r.last_error = v.job.last_error;
  switch (v.job.state) {
  case step_state::processed:
  case step_state::compensated:
  case step_state::cancelled:
    r.next = next_action::none;
    return r;
  case step_state::error:
    r.next = next_action::operator_action;
    return r;
  default:
    break;
  }
  if (!s) {
    r.next = next_action::none;
    return r;
  }
  if (s->locked_by.empty()) {
    if (s->not_before > now) {
      r.next = next_action::wait_backoff;
      r.when = s->not_before;
    } else {
      r.next = next_action::await_claim;
      r.when = now;
    }
    return r;
  }
  r.then = decide_recovery(v, *s, now).action;
  r.when = s->complete_by;
  r.next = s->complete_by && *s->complete_by <= now ? next_action::overdue
                                                    : next_action::await_agent;
  return r;
}

std::string to_string(const stuck_report& r, timestamp now) {
  std::string out = "job " + r.job.value + " " + to_string(r.state);
  if (!r.step) {
    out += r.next == next_action::operator_action
               ? ": failed; operator: fix the cause, then resubmit"
               : ": finished";
    if (!r.last_error.empty())
      out += "; last error: " + r.last_error;
    return out;
  }
  out += ": step " + std::to_string(r.step->value);
  if (r.compensation)
    out += " (compensation)";
  out += " " + std::string{to_string(r.current_state)} + ", attempt "
         + std::to_string(r.attempt.value) + ", failures "
         + std::to_string(r.failure_count) + " of " + std::to_string(r.failure_threshold);
  if (!r.locked_by.empty())
    out += ", locked by scheduler " + std::to_string(r.locked_by.instance) + "/"
           + std::to_string(r.locked_by.incarnation);
  if (r.complete_by)
    out += ", CompleteBy " + relative(*r.complete_by, now);
  out += "; next: ";
  switch (r.next) {
  case next_action::wait_backoff:
    out += "claimable again " + relative(*r.when, now) + " (recovery backoff)";
    break;
  case next_action::await_claim:
    out += "a scheduler claims it";
    break;
  case next_action::await_agent:
    out += "the agent reports; without an outcome by CompleteBy (or if it dies) the "
           "supervisor will "
           + std::string{to_string(*r.then)};
    break;
  case next_action::overdue:
    out += "overdue: the supervisor's next scan will " + std::string{to_string(*r.then)};
    break;
  case next_action::operator_action:
    out += "operator: fix the cause, then resubmit";
    break;
  case next_action::none:
    out += "nothing";
    break;
  }
  if (!r.last_error.empty())
    out += "; last error: " + r.last_error;
  return out;
}

} // namespace conclave::workflow
