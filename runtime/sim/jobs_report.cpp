#include "runtime/sim/jobs_report.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <sstream>

namespace conclave::sim {

namespace {

namespace wf = conclave::workflow;

/// Failing runs listed in full; complaints shown per run.
constexpr size_t max_failures = 20;
constexpr size_t max_complaints = 5;

constexpr wf::step_state final_states[] = {
    wf::step_state::processed, wf::step_state::error, wf::step_state::compensated,
    wf::step_state::cancelled};

double ms(wf::duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

std::string plural(uint64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

} // namespace

jobs_summary::jobs_summary(std::string replay_prefix)
    : prefix_(std::move(replay_prefix)) {}

void jobs_summary::add(const jobs_run_report& r) {
  ++runs_;
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
  if (!r.liveness_judged)
    ++unjudged_;
  for (auto& v : r.violations)
    if (v.safety)
      ++safety_;
  if (r.liveness_failed())
    ++liveness_;
  if (r.violations.empty())
    return;
  if (failures_.size() == max_failures) {
    ++failures_left_out_;
    return;
  }
  failure f;
  f.seed = r.seed;
  f.faults = r.fault_list;
  for (auto& v : r.violations) {
    if (f.what.size() == max_complaints) {
      ++f.more;
      continue;
    }
    f.what.push_back(v.checker + ": " + v.what);
  }
  failures_.push_back(std::move(f));
}

std::string jobs_summary::replay(uint64_t seed) const {
  return prefix_ + " --runs 1 --seed " + std::to_string(seed);
}

void jobs_summary::print(std::ostream& out) const {
  out << std::fixed << std::setprecision(1);
  out << "jobs: " << jobs_ << " in " << plural(runs_, "run") << ":";
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
      << fenced_ << ", link messages " << messages_ << " (lost " << lost_
      << ", duplicated " << duplicated_ << "), service effects " << effects_
      << ", slowest job after heal " << ms(settle_max_) << " ms\n";
  if (unjudged_ > 0)
    out << "liveness not judged in " << plural(unjudged_, "run")
        << " (no live scheduler or supervisor at the end)\n";
  for (auto& f : failures_) {
    out << "FAILED seed " << f.seed << " (faults "
        << (f.faults.empty() ? "none" : f.faults) << "):\n";
    for (auto& w : f.what)
      out << "  " << w << '\n';
    if (f.more > 0)
      out << "  (" << f.more << " more)\n";
    out << "  replay: " << replay(f.seed) << '\n';
  }
  if (failures_left_out_ > 0)
    out << "(" << plural(failures_left_out_, "more failing run") << " not listed)\n";
  out << verdict() << '\n';
}

std::string jobs_summary::verdict() const {
  std::ostringstream o;
  o << (safety_ + liveness_ == 0 ? "OK: " : "FAILED: ")
    << plural(safety_, "safety violation") << ", "
    << plural(liveness_, "liveness failure") << " in " << plural(runs_, "run");
  return o.str();
}

std::string jobs_summary::to_json(uint64_t seed, const std::string& faults) const {
  nlohmann::json doc;
  doc["workload"] = "jobs";
  doc["seed"] = seed;
  doc["runs"] = runs_;
  doc["faults"] = faults;
  doc["verdict"] = verdict();
  doc["jobs"] = jobs_;
  auto& outcomes = doc["outcomes"];
  size_t unfinished = jobs_;
  for (auto s : final_states) {
    outcomes[wf::to_string(s)] = outcomes_[static_cast<size_t>(s)];
    unfinished -= outcomes_[static_cast<size_t>(s)];
  }
  outcomes["not_final"] = unfinished;
  doc["safety_violations"] = safety_;
  doc["liveness_failures"] = liveness_;
  doc["liveness_not_judged"] = unjudged_;
  doc["faults_applied"] = faults_;
  doc["dispatches"] = dispatches_;
  doc["recoveries"] = {
      {"deadline", deadline_}, {"monitor", monitor_}, {"failure", failure_}};
  doc["stale_replies"] = stale_;
  doc["fenced_writes"] = fenced_;
  doc["link_messages"] = {
      {"total", messages_}, {"lost", lost_}, {"duplicated", duplicated_}};
  doc["service_effects"] = effects_;
  doc["slowest_after_heal_ms"] = ms(settle_max_);
  auto& list = doc["failures"] = nlohmann::json::array();
  for (auto& f : failures_)
    list.push_back({{"seed", f.seed},
                    {"faults", f.faults},
                    {"what", f.what},
                    {"replay", replay(f.seed)}});
  return doc.dump();
}

} // namespace conclave::sim
