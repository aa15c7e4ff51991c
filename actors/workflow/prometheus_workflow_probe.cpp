#include "actors/workflow/prometheus_workflow_probe.hpp"

namespace conclave::workflow {

namespace {

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

prometheus::Counter& counter(prometheus::Registry& r, const char* name,
                             const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

} // namespace

prometheus_workflow_probe::prometheus_workflow_probe(
    std::shared_ptr<prometheus::Registry> registry, bool state_gauges)
    : registry_(registry ? std::move(registry)
                         : std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  if (state_gauges) {
    auto& jobs = prometheus::BuildGauge()
                     .Name("conclave_workflow_jobs")
                     .Help("Jobs by state (changes made through this process)")
                     .Register(r);
    auto& steps = prometheus::BuildGauge()
                      .Name("conclave_workflow_steps")
                      .Help("Steps by state (changes made through this process)")
                      .Register(r);
    for (size_t i = 0; i < state_count; ++i) {
      auto name = to_string(static_cast<step_state>(i));
      jobs_[i] = &jobs.Add({{"state", name}});
      steps_[i] = &steps.Add({{"state", name}});
    }
  }
  auto& dispatches = prometheus::BuildCounter()
                         .Name("conclave_workflow_dispatches_total")
                         .Help("Steps claimed and sent to an agent")
                         .Register(r);
  dispatches_ = &dispatches.Add({{"action", "step"}});
  compensation_dispatches_ = &dispatches.Add({{"action", "compensation"}});
  step_seconds_ =
      &prometheus::BuildHistogram()
           .Name("conclave_workflow_step_duration_seconds")
           .Help("From a step's claim to its recorded outcome")
           .Register(r)
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120});
  stale_replies_ = &counter(r, "conclave_workflow_stale_replies_total",
                            "Outcomes of an older attempt discarded");
  retries_ = &counter(r, "conclave_workflow_agent_retries_total",
                      "Service calls an agent retried after a transient failure");
  deadline_expiries_ = &counter(r, "conclave_workflow_deadline_expiries_total",
                                "Agents that gave up at a step's deadline");
  auto& recoveries = prometheus::BuildCounter()
                         .Name("conclave_workflow_recoveries_total")
                         .Help("Steps given back after a lost attempt, by cause")
                         .Register(r);
  for (size_t i = 0; i < cause_count; ++i)
    recoveries_[i] =
        &recoveries.Add({{"cause", to_string(static_cast<recovery_cause>(i))}});
  fenced_ = &counter(r, "conclave_workflow_fenced_writes_total",
                     "Supervisor recoveries refused: a higher term is recorded");
  compensations_ = &counter(r, "conclave_workflow_compensations_total",
                            "Jobs that started compensating");
  scan_seconds_ =
      &prometheus::BuildHistogram()
           .Name("conclave_workflow_supervisor_scan_duration_seconds")
           .Help("Supervisor scans of the CompleteBy index (count and "
                 "duration)")
           .Register(r)
           .Add({},
                prometheus::Histogram::BucketBoundaries{0.0001, 0.001, 0.01, 0.1, 1, 10});
}

void prometheus_workflow_probe::dispatched(bool compensation) {
  (compensation ? compensation_dispatches_ : dispatches_)->Increment();
}

void prometheus_workflow_probe::step_finished(step_state, std::chrono::nanoseconds d) {
  step_seconds_->Observe(seconds(d));
}

void prometheus_workflow_probe::stale_reply() {
  stale_replies_->Increment();
}

void prometheus_workflow_probe::agent_retry() {
  retries_->Increment();
}

void prometheus_workflow_probe::deadline_expired() {
  deadline_expiries_->Increment();
}

void prometheus_workflow_probe::recovered(recovery_cause c) {
  auto i = static_cast<size_t>(c);
  if (i < cause_count)
    recoveries_[i]->Increment();
}

void prometheus_workflow_probe::fenced_off() {
  fenced_->Increment();
}

void prometheus_workflow_probe::compensation_started() {
  compensations_->Increment();
}

void prometheus_workflow_probe::scanned(std::chrono::nanoseconds d) {
  scan_seconds_->Observe(seconds(d));
}

void prometheus_workflow_probe::job_state_changed(std::optional<job_state> from,
                                                  job_state to) {
  if (!jobs_[0])
    return; // no state gauges
  if (from && static_cast<size_t>(*from) < state_count)
    jobs_[static_cast<size_t>(*from)]->Decrement();
  if (static_cast<size_t>(to) < state_count)
    jobs_[static_cast<size_t>(to)]->Increment();
}

void prometheus_workflow_probe::step_state_changed(std::optional<step_state> from,
                                                   step_state to) {
  if (!steps_[0])
    return; // no state gauges
  if (from && static_cast<size_t>(*from) < state_count)
    steps_[static_cast<size_t>(*from)]->Decrement();
  if (static_cast<size_t>(to) < state_count)
    steps_[static_cast<size_t>(to)]->Increment();
}

} // namespace conclave::workflow
