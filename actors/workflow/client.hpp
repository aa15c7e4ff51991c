// The client (docs/patterns.md, "Scheduler Agent Supervisor": the submitting
// application's side). See client_actor in interfaces.hpp for the protocol.
//
// - submit validates the job (empty job, unknown agent kind, zero timeout,
//   oversized payload or id, bad retry policy → typed errors, nothing written),
//   gives it an id if it has none ("<prefix>-<n>"), and writes the job record,
//   its step records and its index entries in ONE store transaction (the
//   "received" event is derived from the job record, not stored); job_exists
//   if the id is taken.
// - cancel and resubmit are job transactions like the scheduler's.
// - get, list, events and explain read committed state (snapshots).
#pragma once

#include "actors/store/store_interface.hpp"
#include "actors/timer/host_clock.hpp"
#include "actors/workflow/interfaces.hpp"
#include "actors/workflow/workflow_probe.hpp"

#include <caf/actor_system.hpp>

#include <set>
#include <string>

namespace conclave::workflow {

struct client_options {
  store::store_actor store;
  /// Agent kinds some agent serves; submissions naming others are refused.
  std::set<std::string> known_kinds;
  /// Accept every agent kind (the caller checks them, e.g. against the
  /// kinds a cluster's nodes registered).
  bool any_kind = false;
  record_limits limits;
  /// Generated ids are "<prefix>-<n>".
  std::string id_prefix = "job";
  /// false: one store request per round trip (see scheduler_options).
  bool pipelined = true;
  /// true: every store round trip is one op_batch (see scheduler_options).
  bool batched = true;
  /// Batched: submissions that arrive while a submission batch is in flight
  /// wait and then go together, one transaction and one message for all of
  /// them (job_store::create_many), up to this many; 1 (or 0): one message
  /// per submission.
  size_t submit_group = 64;
  /// Reports submissions, cancels and resubmits (job and step states).
  std::shared_ptr<workflow_probe> probe;
  /// Added to the actor clock's reading to make the workflow's timestamps
  /// (deadlines, CompleteBy, events). 0 under the test coordinator; a node
  /// sets it so they are wall-clock time since the Unix epoch, comparable
  /// across the cluster's processes and machines (within their clock skew).
  duration clock_offset{0};
  /// How the actor reads time and arms its timers (null: CAF's clock); the
  /// simulated world gives its node's drifting clock.
  std::shared_ptr<host_clock> clock;
};

client_actor spawn_client(caf::actor_system& sys, client_options opts);

} // namespace conclave::workflow
