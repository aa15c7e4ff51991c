// The summary of many runs of the replication workload: what `conclave sim
// --workload replication` prints (docs/design/simulation.md, "Replication
// workload"). Plain: writes and acknowledgements, lost commits (must be 0),
// failovers and sync-phase durations, messages, every failing run with its
// checkers' complaints and its replay command, and one verdict line. --json:
// one document.
#pragma once

#include "runtime/sim/repl_simulation.hpp"

#include "runtime/sim/run_verdicts.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace conclave::sim {

class repl_summary {
public:
  /// `replay_prefix` is the command that reproduces a run without its
  /// `--runs 1 --seed N` (which the summary appends).
  explicit repl_summary(std::string replay_prefix);

  void add(const repl_run_report& r);

  void print(std::ostream& out) const;
  /// "OK: 0 safety violations, 0 liveness failures in 500 runs" (or FAILED).
  std::string verdict() const;
  std::string to_json(uint64_t seed, const std::string& faults) const;

  bool safety_violated() const { return verdicts_.safety() > 0; }
  bool liveness_failed() const { return verdicts_.liveness() > 0; }
  size_t runs() const { return verdicts_.runs(); }
  uint64_t lost() const { return lost_; }

private:
  /// Percentile p (0..100) of the sync-phase durations, in ms.
  double sync_ms(double p) const;

  run_verdicts verdicts_;
  uint64_t acting_reads_ = 0;
  uint64_t history_ops_ = 0, history_unanswered_ = 0, history_undecided_ = 0;
  uint64_t faults_ = 0, writes_ = 0, strong_ = 0, weak_ = 0, lost_ = 0, syncs_ = 0,
           failovers_ = 0, samples_ = 0, discarded_ = 0, messages_ = 0,
           messages_lost_ = 0, duplicated_ = 0, unsynced_lost_ = 0, checkpoints_ = 0,
           installs_ = 0;
  disk_counts disks_;
  std::vector<duration> sync_durations_;
  duration recovery_max_{0};
  uint64_t recovered_runs_ = 0;
};

} // namespace conclave::sim
