// CAF inspection of the workflow core's types, so they travel as messages
// (and print). The pure core stays free of CAF headers; these overloads sit in
// its namespace so that ADL finds them.
#pragma once

#include "protocols/workflow/explain.hpp"
#include "protocols/workflow/lifecycle.hpp"

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <optional>

namespace conclave::workflow {

/// An std::optional as (present, value): CAF 0.17 has no std::optional support.
template <class T>
struct optional_field {
  std::optional<T>* x;
};

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_field<T>& o) {
  bool has = o.x->has_value();
  T value = has ? **o.x : T{};
  return f(has, value, caf::meta::load_callback([&]() -> caf::error {
             if (has)
               *o.x = value;
             else
               o.x->reset();
             return caf::error{};
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_policy& x) {
  return f(caf::meta::type_name("retry_policy"), x.max_attempts, x.initial_interval,
           x.multiplier, x.max_interval, x.jitter, x.non_retryable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compensation_spec& x) {
  return f(caf::meta::type_name("compensation_spec"), x.agent_kind, x.payload);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_spec& x) {
  optional_field<compensation_spec> c{&x.compensation};
  return f(caf::meta::type_name("step_spec"), x.agent_kind, x.payload, x.timeout, x.retry,
           c);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_spec& x) {
  return f(caf::meta::type_name("job_spec"), x.id, x.steps, x.failure_threshold,
           x.recovery_backoff);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_record& x) {
  optional_field<timestamp> cb{&x.complete_by};
  return f(caf::meta::type_name("step_record"), x.job, x.index, x.spec, x.state,
           x.locked_by, x.agent, cb, x.failure_count, x.compensation_failures, x.attempt,
           x.last_error, x.created, x.updated, x.not_before, x.completed_seq);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_record& x) {
  return f(caf::meta::type_name("job_record"), x.id, x.state, x.step_count, x.current,
           x.failure_threshold, x.recovery_backoff, x.created, x.updated, x.completions,
           x.next_event, x.last_error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_event& x) {
  return f(caf::meta::type_name("job_event"), x.job, x.seq, x.kind, x.step, x.attempt,
           x.at, x.detail);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_view& x) {
  return f(caf::meta::type_name("job_view"), x.job, x.steps, x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dispatch& x) {
  return f(caf::meta::type_name("dispatch"), x.job, x.step, x.attempt, x.compensation,
           x.agent_kind, x.payload, x.deadline, x.idempotency_key, x.retry);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("step_outcome"), x.ok, x.kind, x.error_kind, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stuck_report& x) {
  optional_field<step_index> step{&x.step};
  optional_field<timestamp> cb{&x.complete_by};
  optional_field<timestamp> when{&x.when};
  optional_field<recovery_action> then{&x.then};
  return f(caf::meta::type_name("stuck_report"), x.job, x.state, step, x.current_state,
           x.compensation, x.attempt, x.failure_count, x.failure_threshold, x.locked_by,
           cb, x.last_error, x.next, when, then);
}

} // namespace conclave::workflow
