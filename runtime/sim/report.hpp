// Aggregates simulation runs into what users read: a table per algorithm, one JSON
// document, CSV files and gnuplot SVG plots.
#pragma once

#include "runtime/sim/simulation.hpp"

#include <boost/outcome.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace conclave::sim {

/// A run that broke a safety or liveness property, with the command that
/// replays it exactly.
struct run_failure {
  election::algorithm algo;
  size_t nodes;
  uint64_t seed;
  std::string what;
  std::string replay;
};

/// Cost of one kind of election (start-up or failover) in a group.
struct election_summary {
  uint64_t elections = 0;
  double messages_mean = 0;
  uint64_t messages_min = 0; ///< 0 when a leader came back by itself (a pause)
  uint64_t messages_max = 0;
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
};

struct group_summary {
  election::algorithm algo;
  size_t nodes = 0; ///< 0: every group size together
  size_t runs = 0;
  uint64_t elections = 0;
  double messages_mean = 0;
  uint64_t messages_min = 0;
  uint64_t messages_max = 0;
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
  election_summary startup;
  election_summary failover;
  uint64_t safety_violations = 0;
  uint64_t split_brain_windows = 0;
  double split_brain_ms = 0;
  double split_brain_max_ms = 0;
  uint64_t stale_leader_windows = 0;
  double stale_leader_max_ms = 0;
  uint64_t liveness_failures = 0;
  uint64_t leader_changes = 0;
  /// Leaders taken in a term above that of a healthy leader connected to a
  /// majority (run_report::needless_leader_changes).
  uint64_t needless_leader_changes = 0;
  uint64_t messages_delivered = 0;
  /// Mean over runs of the fraction of time with an agreed, acting leader.
  double leader_time_fraction = 0;
};

class sim_summary {
public:
  /// `replay_prefix` is the command line without --nodes/--runs/--seed, e.g.
  /// "conclave sim --algorithm bully --faults '...'".
  void add(const run_report& r, const std::string& replay_prefix);

  /// One summary per algorithm (all group sizes), in the order first seen.
  std::vector<group_summary> per_algorithm() const;
  /// One summary per (algorithm, group size).
  std::vector<group_summary> per_group() const;

  const std::vector<run_failure>& failures() const { return failures_; }
  bool safety_violated() const;
  bool liveness_failed() const;

  void print_table(std::ostream& out) const;
  /// One line: "OK: 0 safety violations, 0 liveness failures in 400 runs; ..."
  /// or "FAILED: ...".
  std::string verdict() const;
  /// The --json document.
  std::string to_json(uint64_t seed, size_t runs, const std::string& faults,
                      bool guard) const;
  /// CSV of every run and every election, the timeline of `timeline_run`, and
  /// SVG plots rendered with gnuplot. The error says what failed.
  /// `faults` labels the timeline plot.
  BOOST_OUTCOME_V2_NAMESPACE::result<void, std::string>
  write_outputs(const std::string& dir, const run_report& timeline_run,
                const std::string& faults = {}) const;

private:
  struct run_row {
    election::algorithm algo;
    size_t nodes;
    uint64_t seed;
    size_t elections;
    uint64_t messages_sent;
    uint64_t safety;
    uint64_t split_windows;
    double split_ms;
    bool live;
    uint64_t leader_changes;
    double agreement_after_heal_ms;
    double split_max_ms;
    uint64_t stale_windows;
    double stale_max_ms;
    double leader_fraction;
    uint64_t elections_after_stable;
    std::vector<double> split_window_ms;
    std::vector<double> stale_window_ms;
    uint64_t needless_changes = 0;
  };
  struct election_row {
    election::algorithm algo;
    size_t nodes;
    uint64_t seed;
    election_record record;
  };

  group_summary summarize(election::algorithm algo, size_t nodes) const;

  std::vector<std::pair<election::algorithm, size_t>> groups_;
  std::vector<run_row> runs_;
  std::vector<election_row> elections_;
  std::vector<run_failure> failures_;
};

} // namespace conclave::sim
