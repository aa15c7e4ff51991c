// What the summaries of the jobs and replication workloads keep about failing
// runs: safety violations and liveness failures counted, the first failing runs
// with a few of their checkers' complaints and their replay command, and the
// verdict line. One piece, so both workloads judge and print runs alike.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace conclave::sim {

/// One checker complaint about a run, as the summaries keep it.
struct complaint {
  std::string checker;
  std::string what;
  bool safety = true;
};

class run_verdicts {
public:
  /// `replay_prefix` is the command that reproduces a run without its
  /// `--runs 1 --seed N` (which replay() appends).
  explicit run_verdicts(std::string replay_prefix);

  /// One run's complaints; `liveness_failed`: the run failed liveness;
  /// `judged`: its liveness was judged at all.
  void add(uint64_t seed, const std::string& faults, const std::vector<complaint>& what,
           bool liveness_failed, bool judged);

  /// Converts a workload's violations (anything with checker, what, safety).
  template <class Violations>
  static std::vector<complaint> complaints_of(const Violations& vs) {
    std::vector<complaint> out;
    for (auto& v : vs)
      out.push_back({v.checker, v.what, v.safety});
    return out;
  }

  /// "liveness not judged in N runs (`why`)" if any, then every kept failing
  /// run with its replay command, then how many were left out.
  void print_failures(std::ostream& out, const char* why_unjudged) const;
  /// "OK: 0 safety violations, 0 liveness failures in 500 runs" (or FAILED).
  std::string verdict() const;
  /// The kept failing runs as a JSON array (seed, faults, what, replay).
  nlohmann::json failures_json() const;
  /// The keys every workload's JSON result starts with (result_envelope),
  /// filled from these verdicts.
  nlohmann::json envelope(const char* workload, uint64_t seed,
                          const std::string& faults) const;

  std::string replay(uint64_t seed) const;
  size_t runs() const { return runs_; }
  uint64_t safety() const { return safety_; }
  uint64_t liveness() const { return liveness_; }
  uint64_t unjudged() const { return unjudged_; }

private:
  struct failure {
    uint64_t seed = 0;
    std::string faults;            ///< the run's faults, random ones drawn
    std::vector<std::string> what; ///< "checker: complaint", at most a few
    size_t more = 0;               ///< complaints left out
  };

  std::string prefix_;
  size_t runs_ = 0;
  uint64_t safety_ = 0;   ///< safety violations (complaints)
  uint64_t liveness_ = 0; ///< runs with a liveness failure
  uint64_t unjudged_ = 0; ///< runs whose liveness was not judged
  std::vector<failure> failures_;
  size_t failures_left_out_ = 0;
};

/// "1 run", "2 runs".
std::string plural(uint64_t n, const char* word);

/// What every workload's `conclave sim --json` result holds, whatever else it
/// adds (docs/reference/sim-json.md): the workload, the first seed, the
/// schedules run in all, the fault spec as given, the verdict line, the counts
/// of safety violations, liveness failures and runs whose liveness was not
/// judged, and the kept failing runs, each with its seed, complaints (`what`,
/// an array of strings) and replay command.
struct result_counts {
  uint64_t runs = 0;
  uint64_t safety_violations = 0;
  uint64_t liveness_failures = 0;
  uint64_t liveness_not_judged = 0;
};
nlohmann::json result_envelope(const char* workload, uint64_t seed,
                               const std::string& faults, const std::string& verdict,
                               const result_counts& counts, nlohmann::json failures);

} // namespace conclave::sim
