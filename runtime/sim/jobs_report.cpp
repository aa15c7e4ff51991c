#include "runtime/sim/jobs_report.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <sstream>

namespace conclave::sim {

namespace {

namespace wf = conclave::workflow;

/// Failing runs listed in full; complaints shown per run.
constexpr wf::step_state final_states[] = {
    wf::step_state::processed, wf::step_state::error, wf::step_state::compensated,
    wf::step_state::cancelled};

double ms(wf::duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

} // namespace

jobs_summary::jobs_summary(std::string replay_prefix)
    : verdicts_(std::move(replay_prefix)) {}

void jobs_summary::add(const jobs_run_report& r) {
  for (size_t s = 0; s < r.outcomes.size(); ++s) {
    outcomes_[s] += r.outcomes[s];
    jobs_ += r.outcomes[s];
  }
  faults_ += r.faults;
  dispatches_ += r.dispatches;
  stale_ += r.stale_replies;
  deadline_ += r.recoveries_deadline;
  monitor_ += r.recoveries_monitor;
  failure_ += r.recoveries_failure;
  fenced_ += r.fenced_writes;
  messages_ += r.messages;
  lost_ += r.lost;
  duplicated_ += r.duplicated;
  effects_ += r.effects;
  settle_max_ = std::max(settle_max_, r.settle);
  disks_.add(r.disks, r.seed);
  verdicts_.add(r.seed, r.fault_list, run_verdicts::complaints_of(r.violations),
                r.liveness_failed(), r.liveness_judged);
}

void jobs_summary::print(std::ostream& out) const {
  out << std::fixed << std::setprecision(1);
  out << "jobs: " << jobs_ << " in " << plural(verdicts_.runs(), "run") << ":";
  const char* sep = " ";
  for (auto s : final_states) {
    out << sep << wf::to_string(s) << ' ' << outcomes_[static_cast<size_t>(s)];
    sep = ", ";
  }
  size_t unfinished = jobs_;
  for (auto s : final_states)
    unfinished -= outcomes_[static_cast<size_t>(s)];
  out << ", not final " << unfinished << '\n';
  out << "runs: " << plural(faults_, "fault") << ", " << dispatches_
      << " dispatches, recoveries " << deadline_ + monitor_ + failure_ << " (deadline "
      << deadline_ << ", monitor " << monitor_ << ", failure " << failure_
      << "), stale replies discarded " << stale_ << ", fenced supervisor writes "
      << fenced_ << ", messages " << messages_ << " (lost " << lost_ << ", duplicated "
      << duplicated_ << "), service effects " << effects_ << ", slowest job after heal "
      << ms(settle_max_) << " ms\n";
  disks_.print(out);
  verdicts_.print_failures(out, "no majority up with its log at the end");
  out << verdict() << '\n';
}

std::string jobs_summary::verdict() const {
  return verdicts_.verdict();
}

std::string jobs_summary::to_json(uint64_t seed, const std::string& faults) const {
  auto doc = verdicts_.envelope("jobs", seed, faults);
  doc["jobs"] = jobs_;
  auto& outcomes = doc["outcomes"];
  size_t unfinished = jobs_;
  for (auto s : final_states) {
    outcomes[wf::to_string(s)] = outcomes_[static_cast<size_t>(s)];
    unfinished -= outcomes_[static_cast<size_t>(s)];
  }
  outcomes["not_final"] = unfinished;
  doc["faults_applied"] = faults_;
  doc["dispatches"] = dispatches_;
  doc["recoveries"] = {
      {"deadline", deadline_}, {"monitor", monitor_}, {"failure", failure_}};
  doc["stale_replies"] = stale_;
  doc["fenced_writes"] = fenced_;
  doc["messages"] = {{"total", messages_}, {"lost", lost_}, {"duplicated", duplicated_}};
  doc["service_effects"] = effects_;
  doc["slowest_after_heal_ms"] = ms(settle_max_);
  doc["disks"] = disks_.to_json();
  return doc.dump();
}

} // namespace conclave::sim
