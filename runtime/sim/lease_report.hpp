// The summary of many runs of the lease workload: what `conclave sim
// --workload lease` prints (docs/design/simulation.md, "Lease workload"):
// grants, renewals, releases and expiries, the most clients that believed
// they held each lease at one instant, failovers, every failing run with its
// checkers' complaints and its replay command, and one verdict line. --json:
// one document.
#pragma once

#include "runtime/sim/repl_simulation.hpp"
#include "runtime/sim/run_verdicts.hpp"

#include <ostream>
#include <string>

namespace conclave::sim {

class lease_summary {
public:
  /// `replay_prefix` is the command that reproduces a run without its
  /// `--runs 1 --seed N` (which the summary appends).
  lease_summary(std::string replay_prefix, uint32_t limit);

  void add(const lease_run_report& r);

  void print(std::ostream& out) const;
  std::string verdict() const { return verdicts_.verdict(); }
  std::string to_json(uint64_t seed, const std::string& faults) const;

  bool safety_violated() const { return verdicts_.safety() > 0; }
  bool liveness_failed() const { return verdicts_.liveness() > 0; }
  size_t runs() const { return verdicts_.runs(); }
  /// Runs with at least one mutual-exclusion complaint.
  uint64_t exclusion_runs() const { return exclusion_runs_; }

private:
  run_verdicts verdicts_;
  uint32_t limit_;
  uint64_t faults_ = 0, acquires_ = 0, grants_ = 0, busy_ = 0, renewals_ = 0,
           releases_ = 0, expiries_ = 0, pauses_ = 0, failovers_ = 0, messages_ = 0,
           messages_lost_ = 0, exclusion_runs_ = 0, recovered_runs_ = 0;
  size_t max_mutex_ = 0, max_sem_ = 0;
  duration recovery_max_{0};
};

} // namespace conclave::sim
