// The fault plan of the jobs workload (`conclave sim --workload jobs`): the
// shared fault language (fault_plan.hpp; parse_fault_spec(spec,
// workload::jobs) takes the words this workload applies) checked against the
// run's shape, and the workload's own draw of random faults.
//
// A run has jobs_nodes(shape) nodes; node N hosts agentN, schedulerN and
// supervisorN. crash@T and restart@T name an actor here: agentN, schedulerN
// or supervisorN (each a crash of node N) or service; pause@T-U:N, elect@T:N,
// partition and cut name nodes. docs/design/simulation.md, "Fault spec", has
// the meaning of every word.
#pragma once

#include "runtime/sim/fault_plan.hpp"

#include <cstddef>
#include <random>
#include <string>

namespace conclave::sim {

/// How many of each actor a run has (and how much work).
struct jobs_shape {
  size_t jobs = 4;
  size_t steps = 3;
  size_t schedulers = 2;
  size_t agents = 3;
  size_t supervisors = 2;
};

/// How many nodes a run has: max(schedulers, agents, supervisors).
size_t jobs_nodes(const jobs_shape& shape);

/// Checks agent, scheduler, supervisor, node and job numbers against the
/// shape, and the disk faults against the nodes' disk (validate_disk).
outcome::result<void, std::string> validate(const fault_plan& plan,
                                            const jobs_shape& shape,
                                            disk_kind disk = disk_kind::files);

/// Adds plan.random_faults faults drawn from `rng`, each kind as likely:
/// crash and restart of an agent, a scheduler, the supervisor leader or the
/// service; a window of failing, rejecting, hanging or slow service calls; a
/// cancel; a pause of a node or of the leader, a partition, a directed cut, an
/// election asked of a node, a stalled disk. With `disk_faults` (the nodes
/// keep files) also a power loss during a node's sync, or a bit flipped on its
/// disk and a crash, each with a restart of the node (named by an actor it
/// hosts). Every one ends before the horizon.
void add_random_faults(fault_plan& plan, const jobs_shape& shape, std::mt19937_64& rng,
                       bool disk_faults = false);

} // namespace conclave::sim
