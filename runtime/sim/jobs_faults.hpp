// What goes wrong in a run of the jobs workload (`conclave sim --workload
// jobs`), and when: the election's fault language (fault_plan.hpp) with the
// targets of the Scheduler–Agent–Supervisor pattern. docs/design/simulation.md, "Jobs
// workload", has the full table. Times and durations take a unit: us, ms or s.
//
//   crash@T:agentN | schedulerN | supervisorN | service
//                        kill that actor (no goodbye); a supervisor dies with
//                        its election candidate
//   restart@T:...        start it again (a scheduler with a higher
//                        incarnation, a candidate with no memory); restarting
//                        a live one kills it first
//   crash-leader@T       crash the supervisor whose candidate leads at T
//   restart-leader@T     restart the supervisor crash-leader crashed last
//   fail@T1-T2[:P]       each service call in the window fails transiently
//                        with probability P (default 1)
//   reject@T1-T2[:P]     ... fails permanently
//   hang@T1-T2[:P]       ... never answers
//   slow@T1-T2[:P]       ... answers after `slow=` (default 50ms)
//   cancel@T:N           a user cancels job N (1..jobs)
//   loss=P  dup=P        per-message loss / duplication on the scheduler↔agent
//                        and agent↔service links, until heal
//   delay=D | D1..D2     message delay on those links (default 1ms)
//   slow=D               how long a slow answer takes
//   random=K             K random faults drawn from the seed, all healed by the
//                        horizon
//   horizon=T            window of random faults and job submissions
//                        (default 300ms)
//   heal@T               loss and duplication stop at T (default: when the
//                        last fault ends)
#pragma once

#include "runtime/sim/fault_plan.hpp"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::sim {

/// How many of each actor a run has (and how much work).
struct jobs_shape {
  size_t jobs = 4;
  size_t steps = 3;
  size_t schedulers = 2;
  size_t agents = 3;
  size_t supervisors = 2;
};

struct jobs_fault {
  enum class kind {
    crash,
    restart,
    crash_leader,
    restart_leader,
    fail,
    reject,
    hang,
    slow,
    cancel
  };
  enum class role { none, agent, scheduler, supervisor, service };
  kind what = kind::crash;
  timestamp at{0};
  timestamp until{0}; ///< fail, reject, hang, slow
  role target = role::none;
  /// agent, scheduler or supervisor number (from 1); cancel: the job (from 1).
  uint64_t number = 0;
  /// fail, reject, hang, slow: chance that one call is affected.
  double probability = 1;
};

struct jobs_fault_plan {
  std::vector<jobs_fault> faults;
  double loss = 0;
  double dup = 0;
  duration delay_min = std::chrono::milliseconds(1);
  duration delay_max = std::chrono::milliseconds(1);
  duration slow = std::chrono::milliseconds(50);
  unsigned random_faults = 0;
  duration horizon = std::chrono::milliseconds(300);
  std::optional<timestamp> heal;

  /// When the last scheduled fault ends (0 without faults).
  timestamp last_fault_end() const;
  /// When loss and duplication stop: heal@, else the last fault's end.
  timestamp heal_time() const;
};

/// One fault in the spec's own syntax: "crash@12ms:agent2", "hang@5ms-40ms:0.3".
std::string to_string(const jobs_fault& f);

/// Parses a jobs fault spec; the error names the offending item and what was
/// expected.
outcome::result<jobs_fault_plan, std::string>
parse_jobs_fault_spec(std::string_view spec);

/// Checks agent, scheduler, supervisor and job numbers against the shape.
outcome::result<void, std::string> validate(const jobs_fault_plan& plan,
                                            const jobs_shape& shape);

/// Adds plan.random_faults faults drawn from `rng`: crash and restart of an
/// agent, a scheduler, the supervisor leader or the service; a window of
/// failing, rejecting, hanging or slow service calls; a cancel. Every one ends
/// before the horizon.
void add_random_faults(jobs_fault_plan& plan, const jobs_shape& shape,
                       std::mt19937_64& rng);

} // namespace conclave::sim
