// The summary of many runs of the jobs workload: what `conclave sim --workload
// jobs` prints (docs/design/simulation.md, "Jobs workload"). Plain: how the jobs
// ended, what the runs did, what the disks went through (disk_counts.hpp), every
// failing run with its checker's complaint and its replay command, and one
// verdict line. --json: one document.
#pragma once

#include "runtime/sim/jobs_simulation.hpp"

#include "runtime/sim/run_verdicts.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace conclave::sim {

class jobs_summary {
public:
  /// `replay_prefix` is the command that reproduces a run without its
  /// `--runs 1 --seed N` (which the summary appends).
  explicit jobs_summary(std::string replay_prefix);

  void add(const jobs_run_report& r);

  /// The plain report (several lines, the verdict last).
  void print(std::ostream& out) const;
  /// "OK: 0 safety violations, 0 liveness failures in 500 runs" (or FAILED).
  std::string verdict() const;
  /// The --json document.
  std::string to_json(uint64_t seed, const std::string& faults) const;

  bool safety_violated() const { return verdicts_.safety() > 0; }
  bool liveness_failed() const { return verdicts_.liveness() > 0; }
  size_t runs() const { return verdicts_.runs(); }

private:
  run_verdicts verdicts_;
  size_t jobs_ = 0;
  std::array<size_t, workflow::step_state_count> outcomes_{};
  uint64_t faults_ = 0, dispatches_ = 0, stale_ = 0, deadline_ = 0, monitor_ = 0,
           failure_ = 0, fenced_ = 0, messages_ = 0, lost_ = 0, duplicated_ = 0,
           effects_ = 0;
  workflow::duration settle_max_{0};
  disk_counts disks_;
};

} // namespace conclave::sim
