// The scheduler (docs/patterns.md, "Scheduler Agent Supervisor"): drives jobs step
// by step through the store.
//
// - Finds work in the ready index (jobs whose claimable step is due) every
//   poll_interval and right after each outcome, and claims a step in ONE store
//   transaction: LockedBy = (instance, incarnation), CompleteBy = now + timeout,
//   Processing, attempt + 1, the agent it goes to. The job row's Update lock
//   serialises claims, so two schedulers never run the same step.
// - Dispatches it to an agent of the step's kind with the deadline, the
//   idempotency key and the attempt, and records the outcome only if the step
//   is still at that attempt (fencing, in the same kind of transaction); a
//   stale outcome changes nothing and is counted.
// - An agent that replies nothing: the request times out after the deadline
//   and the scheduler does nothing — the supervisor recovers the step.
// - A dispatch that bounces because its agent was already dead (it died after
//   the claim picked it; the supervisor's monitor sweep may have run before
//   the claim committed and missed it) is recorded at once as a transient
//   failure of that attempt: FailureCount + 1, pending again, re-dispatched to
//   a live agent — not left to the deadline.
// - Started with a higher incarnation of the same instance, it first finds the
//   steps its previous life had locked (from the CompleteBy index) and resumes
//   them under a new attempt.
// - Agents it dispatches to are monitored: a dead agent gets no more work.
// - Grouping (batched): while one outcome batch is in flight, the outcomes
//   that arrive wait and then go together in ONE grouped op_batch (one group
//   per job: its checks and writes; a stale job fails only its own group and
//   is redone alone). A poll reads at most poll_limit ready entries.
#pragma once

#include "actors/store/store_interface.hpp"
#include "actors/timer/host_clock.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/workflow_probe.hpp"

#include <caf/actor_system.hpp>

#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace conclave::workflow {

struct agent_entry {
  uint64_t id = 0;
  std::string kind;
  agent_actor handle;
};

struct scheduler_options {
  scheduler_ref self;
  store::store_actor store;
  std::vector<agent_entry> agents;
  duration poll_interval = std::chrono::milliseconds{5};
  /// Jobs being claimed at once. With a durable store every claim waits for
  /// a log sync, so this bounds claims per sync: 16 (with groups of 8) held
  /// durable 1-step jobs to ~12k transitions/s here, 128 (groups of 32)
  /// gave ~23k and halved job latency (docs/design/workflow.md, "Figures").
  size_t claims_in_flight = 128;
  /// Batched: ready jobs claimed per transaction (1: one job each).
  size_t claim_group = 32;
  /// Batched: outcomes that arrive while an outcome batch is in flight wait
  /// and then go together, one transaction and one message for all of them
  /// (job_store::update_known_many), up to this many jobs; 1 (or 0): one
  /// message per outcome, as before.
  size_t outcome_group = 64;
  /// Outcome batches in flight at once; outcomes wait only when all are.
  size_t outcome_batches = 2;
  /// Ready index entries read per poll (0: all); when a poll gets this many
  /// it polls again once they are claimed, so a poll costs O(poll_limit),
  /// not O(ready jobs).
  uint32_t poll_limit = 256;
  /// How long after a deadline the scheduler stops waiting for a reply.
  duration reply_slack = std::chrono::milliseconds{1};
  std::shared_ptr<workflow_probe> probe;
  /// Added to the actor clock's reading to make the workflow's timestamps
  /// (deadlines, CompleteBy, events). 0 under the test coordinator; a node
  /// sets it so they are wall-clock time since the Unix epoch, comparable
  /// across the cluster's processes and machines (within their clock skew).
  duration clock_offset{0};
  /// How the actor reads time and arms its timers (null: CAF's clock); the
  /// simulated world gives its node's drifting clock.
  std::shared_ptr<host_clock> clock;
  /// Where committed job events are published (a client, see client_actor's
  /// subscriptions); none if null.
  caf::actor events;
  /// Shares the ready jobs among several schedulers: this one claims a job
  /// at once only if `mine(job)` holds (null: every job), and any job that
  /// has been ready for `takeover_after` (another's share left unclaimed:
  /// its scheduler may be dead). Disjoint shares keep schedulers that poll
  /// the same store from racing for the same jobs.
  std::function<bool(const job_id&)> mine;
  duration takeover_after = std::chrono::milliseconds{200};
  /// Start polling at once instead of waiting for start_atom.
  bool start_immediately = true;
  /// false: one store request per round trip and claims in index order (the
  /// costs before pipelining; workflow_bench compares both in one run).
  bool pipelined = true;
  /// true: every store round trip is one op_batch message (a job change is
  /// two: reads, then writes + commit; an outcome whose job is unchanged since
  /// the claim is one); false: one message per store operation.
  bool batched = true;
};

scheduler_actor spawn_scheduler(caf::actor_system& sys, scheduler_options opts);

} // namespace conclave::workflow
