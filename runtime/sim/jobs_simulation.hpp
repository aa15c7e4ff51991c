// One run of the jobs workload (`conclave sim --workload jobs`): the real
// scheduler, agent, supervisor and client actors of actors/workflow on the
// simulated world (world.hpp), every node what `conclave node` runs, under a
// fault plan (fault_plan.hpp; the shape checks and the random draw of this
// workload: jobs_faults.hpp); then the checkers (jobs_checkers.hpp) read what
// the run left behind.
//
// Deployment of a run: jobs_nodes(shape) = max(schedulers, agents,
// supervisors) nodes, each the node composition (node_composition.hpp:
// candidate, replica host on a simulated disk, replica front, the leadership
// wiring) and the workflow part (workflow_part.hpp: a replication client and
// the store adapter over it, so job state lives in the replicated store; an
// agent per kind on the node's test service; a scheduler; a client; a
// supervisor that follows the node's candidate and acts only while it leads,
// fenced by the term). Every actor reads time and arms timers on its node's
// drifting clock (world_clock.hpp); candidates and replica hosts reach their
// peers through the world's network (node_world.hpp); a workflow part's
// replication client reaches a member's front directly, if that member is
// alive and no partition or cut separates the two. A crash or restart of
// agentN, schedulerN or supervisorN is one of node N (the process); pause,
// partition, cut and elect name nodes; `service` is the external service,
// down (every call fails transiently) until its restart. The test service's
// state is shared by every node's service actor (one external service); fault
// windows decide each call.
//
// Work: job k ("j<k>", 1-based) is submitted at (k-1) x 3/4 x horizon / jobs,
// with `steps` steps of kind "svc". From the run's seed each job draws its
// failure threshold (2..4), and each step its timeout (50..150 ms), tries per
// dispatch (1..3, 2 ms initial backoff) and whether it declares a
// compensation ("undo", probability 1/2). A submission that fails, or whose
// node dies with it, is submitted again.
//
// Disk: each node's data directory on a simulated file system, opened by the
// node's own storage code at every start (world_node_disk.hpp), as in the
// replication workload: fsync-loss@T:N cuts the power during node N's next
// sync, bitflip@T:N flips a synced bit of its log, a start whose storage
// refuses to open leaves the node down, and random=N also draws power losses
// and bit flips. Or records in memory (no bit flips; a power loss is a crash).
//
// Determinism: one std::mt19937_64 seeded with the run's seed draws the
// random faults, the jobs, the seed of the world's network and that of the
// service's fault windows; the world runs every node on one test coordinator
// in one event order. Same settings, same report.
#pragma once

#include "runtime/sim/disk_counts.hpp"
#include "runtime/sim/jobs_checkers.hpp"
#include "runtime/sim/jobs_faults.hpp"

#include <array>
#include <cstdint>

namespace conclave::sim {

struct jobs_settings {
  jobs_shape shape;
  /// The parsed spec; a run adds its own random faults to a copy.
  fault_plan plan;
  uint64_t seed = 1;
  /// false: the test service applies every call, even a repeated key (not
  /// idempotent). The broken fixture of the checkers' meta-test.
  bool idempotent_service = true;
  /// Each node's data directory as `conclave node` keeps it, opened by the
  /// node's own storage code at every start (files: takes power losses and
  /// bit flips, and random= draws them), or records in memory.
  disk_kind disk = disk_kind::files;
  /// The supervisors' recovery writes ignore the attempt fence
  /// (supervisor_options::unsafe_ignore_attempt_fence): the planted defect
  /// `--unsafe supervisor-ignores-fence` the checkers must catch.
  bool unsafe_ignore_fence = false;
};

/// What one run did and what the checkers found.
struct jobs_run_report {
  uint64_t seed = 0;
  /// Jobs by the state they ended in (indexed by step_state).
  std::array<size_t, workflow::step_state_count> outcomes{};
  std::vector<jobs_violation> violations;
  /// Was liveness judged (see jobs_observation::judge_liveness)?
  bool liveness_judged = true;
  // -- what happened --
  uint64_t faults = 0; ///< faults applied (random ones included)
  /// The run's faults, random ones drawn, in the spec's syntax.
  std::string fault_list;
  uint64_t dispatches = 0;
  uint64_t stale_replies = 0;
  uint64_t recoveries_deadline = 0;
  uint64_t recoveries_monitor = 0;
  uint64_t recoveries_failure = 0;
  uint64_t fenced_writes = 0;
  uint64_t messages = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t effects = 0;
  /// Files disk: power losses, bit flips, and what the starts found.
  disk_counts disks;
  /// Longest time from heal (or submission, if later) to a job's final state.
  workflow::duration settle{0};
  /// Virtual time at which the run ended.
  workflow::duration end{0};
  /// heal and bound of this run.
  workflow::timestamp heal{0};
  workflow::duration bound{0};

  bool safety_violated() const;
  bool liveness_failed() const;
};

/// How long jobs have to become final once faults heal:
/// 1 s (a supervisor election) + 2 x steps x (150 ms step timeout + 10 ms scan
/// + 5 ms poll + 4 x max delay + slow).
workflow::duration jobs_bound(const jobs_shape& shape, const fault_plan& plan);

jobs_run_report run_jobs_simulation(const jobs_settings& settings);

} // namespace conclave::sim
