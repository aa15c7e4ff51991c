// The summary of many runs of the jobs workload: what `conclave sim --workload
// jobs` prints (docs/simulation.md, "Jobs workload"). Plain: how the jobs
// ended, what the runs did, every failing run with its checker's complaint
// and its replay command, and one verdict line. --json: one document.
#pragma once

#include "runtime/sim/jobs_simulation.hpp"

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

  bool safety_violated() const { return safety_ > 0; }
  bool liveness_failed() const { return liveness_ > 0; }
  size_t runs() const { return runs_; }

private:
  struct failure {
    uint64_t seed = 0;
    std::string faults;            ///< the run's faults, random ones drawn
    std::vector<std::string> what; ///< "checker: complaint", at most a few
    size_t more = 0;               ///< complaints left out
  };

  std::string replay(uint64_t seed) const;

  std::string prefix_;
  size_t runs_ = 0;
  size_t jobs_ = 0;
  std::array<size_t, workflow::step_state_count> outcomes_{};
  uint64_t safety_ = 0;   ///< safety violations (complaints)
  uint64_t liveness_ = 0; ///< runs with a liveness failure
  uint64_t unjudged_ = 0; ///< runs whose liveness was not judged
  uint64_t faults_ = 0, dispatches_ = 0, stale_ = 0, deadline_ = 0, monitor_ = 0,
           failure_ = 0, fenced_ = 0, messages_ = 0, lost_ = 0, duplicated_ = 0,
           effects_ = 0;
  workflow::duration settle_max_{0};
  std::vector<failure> failures_;
  size_t failures_left_out_ = 0;
};

} // namespace conclave::sim
