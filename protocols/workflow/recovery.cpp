#include "protocols/workflow/recovery.hpp"

#include <algorithm>

namespace conclave::workflow {

const char* to_string(recovery_action a) noexcept {
  switch (a) {
  case recovery_action::retry:
    return "retry";
  case recovery_action::fail:
    return "fail";
  case recovery_action::compensate:
    return "compensate";
  }
  return "unknown";
}

std::vector<step_index> compensation_order(const job_view& v) {
  std::vector<const step_record*> done;
  for (auto& s : v.steps)
    if (s.completed_seq > 0 && s.spec.compensation
        && (s.state == step_state::processed || s.state == step_state::compensating))
      done.push_back(&s);
  std::sort(done.begin(), done.end(),
            [](auto* a, auto* b) { return a->completed_seq > b->completed_seq; });
  std::vector<step_index> out;
  for (auto* s : done)
    out.push_back(s->index);
  return out;
}

bool can_compensate(const job_view& v) {
  return !compensation_order(v).empty();
}

recovery_decision decide_recovery(const job_view& v, const step_record& s,
                                  timestamp now) {
  recovery_decision d;
  bool undoing = s.state == step_state::compensating;
  auto count = undoing ? s.compensation_failures : s.failure_count;
  d.failure_count = count + 1;
  if (d.failure_count < v.job.failure_threshold) {
    d.action = recovery_action::retry;
    d.not_before = now + v.job.recovery_backoff;
    return d;
  }
  d.action =
      !undoing && can_compensate(v) ? recovery_action::compensate : recovery_action::fail;
  return d;
}

} // namespace conclave::workflow
