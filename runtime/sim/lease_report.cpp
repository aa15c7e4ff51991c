#include "runtime/sim/lease_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iomanip>

namespace conclave::sim {

namespace {

double lease_ms(duration d) {
  return static_cast<double>(d.count()) / 1e6;
}

} // namespace

lease_summary::lease_summary(std::string replay_prefix, uint32_t limit)
    : verdicts_(std::move(replay_prefix)), limit_(limit) {}

void lease_summary::add(const lease_run_report& r) {
  faults_ += r.faults;
  acquires_ += r.acquires;
  grants_ += r.grants;
  busy_ += r.busy;
  renewals_ += r.renewals;
  releases_ += r.releases;
  expiries_ += r.expiries;
  pauses_ += r.client_pauses;
  failovers_ += r.failovers();
  messages_ += r.messages;
  messages_lost_ += r.messages_lost;
  max_mutex_ = std::max(max_mutex_, r.max_mutex_believers);
  max_sem_ = std::max(max_sem_, r.max_sem_believers);
  if (std::any_of(r.violations.begin(), r.violations.end(),
                  [](auto& v) { return v.checker == "mutual_exclusion"; }))
    ++exclusion_runs_;
  if (r.recovery) {
    ++recovered_runs_;
    recovery_max_ = std::max(recovery_max_, *r.recovery);
  }
  verdicts_.add(r.seed, r.fault_list, run_verdicts::complaints_of(r.violations),
                r.liveness_failed(), r.liveness_judged);
}

void lease_summary::print(std::ostream& out) const {
  out << std::fixed << std::setprecision(1);
  out << "leases: " << acquires_ << " acquires sent, " << grants_ << " grants, " << busy_
      << " busy, " << renewals_ << " renewals, " << releases_ << " releases, "
      << expiries_ << " expiries (renewal or release answered stale_token)\n";
  out << "max concurrent believers: mutex " << max_mutex_ << " (limit 1)";
  if (limit_ > 1)
    out << ", semaphore " << max_sem_ << " (limit " << limit_ << ")";
  out << "; runs with overlapping believers: " << exclusion_runs_ << " (must be 0)\n";
  out << "failovers: " << failovers_ << "; first grant after heal: at most "
      << lease_ms(recovery_max_) << " ms (" << recovered_runs_ << " of "
      << plural(verdicts_.runs(), "run") << ")\n";
  out << "runs: " << plural(faults_, "fault") << ", client pauses " << pauses_
      << ", messages " << messages_ << " (lost " << messages_lost_ << ")\n";
  verdicts_.print_failures(out, "no majority up with its log at the end");
  out << verdict() << '\n';
}

std::string lease_summary::to_json(uint64_t seed, const std::string& faults) const {
  auto doc = verdicts_.envelope("lease", seed, faults);
  doc["faults_applied"] = faults_;
  doc["acquires"] = acquires_;
  doc["grants"] = grants_;
  doc["busy"] = busy_;
  doc["renewals"] = renewals_;
  doc["releases"] = releases_;
  doc["expiries"] = expiries_;
  doc["client_pauses"] = pauses_;
  doc["max_believers"] = {{"mutex", max_mutex_}, {"semaphore", max_sem_}};
  doc["runs_with_overlapping_believers"] = exclusion_runs_;
  doc["failovers"] = failovers_;
  doc["first_grant_after_heal_max_ms"] = lease_ms(recovery_max_);
  doc["messages"] = {{"total", messages_}, {"lost", messages_lost_}};
  return doc.dump();
}

} // namespace conclave::sim
