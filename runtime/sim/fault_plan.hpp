// What goes wrong in a simulation run, and when: the fault spec.
//
// A spec is a comma-separated list of items (docs/concepts/simulation.md has the full
// table). Times and durations take a unit: us, ms or s.
//
//   crash@T:N            crash candidate N at T (its actor dies; peers get
//                        "peer down" as across a dropped connection)
//   restart@T:N          restart N with the same id and no memory
//   pause@T1-T2:N        freeze N (SIGSTOP-like: silent but alive) until T2
//   crash-leader@T       crash whoever leads at T
//   restart-leader@T     restart the candidate crash-leader crashed last
//   pause-leader@T1-T2   freeze whoever leads at T1
//   partition@T1-T2:G|G  symmetric partition; G = 1-3 (range), 1+4+5 (list) or 2
//   cut@T1-T2:G>G        directed: messages from the first group to the second
//   elect@T:N            N starts an election at T
//   loss=P  dup=P        per-message loss / duplication probability (0..1)
//   delay=D | D1..D2     message delay, fixed or uniform (default 1ms)
//   random=K             K random faults (crash+restart, pause, partition,
//                        crash-leader) before the horizon; they all heal
//   horizon=T            end of the random-fault window (default 2s)
//   heal@T               loss and duplication stop at T (default: when the last
//                        fault ends)
#pragma once

#include "protocols/election/types.hpp"

#include <boost/outcome.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace conclave::sim {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;
using election::duration;
using election::node_id;
using election::timestamp;

struct fault {
  enum class kind {
    crash,
    restart,
    pause,
    crash_leader,
    restart_leader,
    pause_leader,
    partition,
    cut,
    elect
  };
  kind what = kind::crash;
  timestamp at{0};
  timestamp until{0}; ///< pause, partition, cut
  node_id node;       ///< crash, restart, pause, elect
  /// partition: the groups; cut: groups[0] → groups[1] is cut.
  std::vector<std::vector<node_id>> groups;
};

struct fault_plan {
  std::vector<fault> faults;
  double loss = 0;
  double dup = 0;
  duration delay_min = std::chrono::milliseconds(1);
  duration delay_max = std::chrono::milliseconds(1);
  unsigned random_faults = 0;
  duration horizon = std::chrono::seconds(2);
  std::optional<timestamp> heal;

  /// When the last scheduled fault ends (0 without faults).
  timestamp last_fault_end() const;
  /// When loss and duplication stop: heal@, else the last fault's end.
  timestamp heal_time() const;
};

/// Parses a fault spec; the error names the offending item and what was expected.
outcome::result<fault_plan, std::string> parse_fault_spec(std::string_view spec);

/// Checks node ids against the group size.
outcome::result<void, std::string> validate(const fault_plan& plan, size_t nodes);

/// Adds plan.random_faults random faults for a group of `nodes`, drawn from `rng`.
/// Every random fault heals before the horizon (crashes are restarted).
void add_random_faults(fault_plan& plan, size_t nodes, std::mt19937_64& rng);

/// "250ms", "2s", "100us" → duration.
outcome::result<duration, std::string> parse_duration(std::string_view text);

// The pieces of the spec language other workloads' specs share (jobs_faults.hpp).

/// "'text'": how error messages show what they got.
std::string quote(std::string_view text);
/// "42" → 42; nothing unless the text is all decimal digits and fits 64 bits.
std::optional<uint64_t> parse_number(std::string_view text);
/// When the last of `faults` ends (0 without faults): the latest `at` or
/// `until` (the plans' last_fault_end()).
template <class Fault>
timestamp last_end_of(const std::vector<Fault>& faults) {
  timestamp t{0};
  for (auto& f : faults)
    t = std::max({t, f.at, f.until});
  return t;
}
/// heal@ if the spec set it, else when the last fault ends (the plans'
/// heal_time()).
template <class Plan>
timestamp heal_time_of(const Plan& plan) {
  if (plan.heal)
    return *plan.heal;
  return plan.last_fault_end();
}
/// "0.05" → a probability in [0, 1].
outcome::result<double, std::string> parse_probability(std::string_view text);
/// "1s-2s" → (T1, T2) with T1 < T2.
outcome::result<std::pair<timestamp, timestamp>, std::string>
parse_window(std::string_view text);
/// "1ms" or "1ms..5ms" → (min, max) message delay, positive.
outcome::result<std::pair<duration, duration>, std::string>
parse_delay(std::string_view text);
/// Splits a spec at commas, trims spaces, refuses empty items and calls
/// `item` on each in order; the first error ends it.
outcome::result<void, std::string> for_each_spec_item(
    std::string_view spec,
    const std::function<outcome::result<void, std::string>(std::string_view)>& item);

} // namespace conclave::sim
