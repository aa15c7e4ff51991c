// The agent kinds every `conclave node` serves without user code (docs/concepts/
// workflows.md, "Built-in agent kinds"). Each is a workflow service actor (see
// actors/workflow/interfaces.hpp): an agent of that kind calls it once per try
// with the step's idempotency key, attempt, compensation flag, payload and
// deadline, and retries transient failures itself.
//
// exec — the payload is a command line, run as `/bin/sh -c PAYLOAD` in a new
//   process in its own process group, stdin from /dev/null, stdout and stderr
//   together into one pipe. Its environment is the node's plus
//     CONCLAVE_IDEMPOTENCY_KEY   the step's key ("job/step", "job/step/undo"):
//                                the same on every try, so the command can skip
//                                work it has already done
//     CONCLAVE_ATTEMPT           the dispatch number, in decimal
//     CONCLAVE_COMPENSATION      1 when this is the step's compensating action, else 0
//     CONCLAVE_DEADLINE_UNIX_MS  the step's deadline, wall-clock milliseconds since
//                                the Unix epoch
//     CONCLAVE_NODE_ID           the id of the node running the command (when
//                                builtin_options::node_id is set, as every node sets it)
//   Outcome, by how the command ends:
//     exit 0             success; message = the tail of the output
//     exit 100           permanent failure, error_kind "exit_100" (no retry: the step
//                        fails, or is compensated)
//     any other exit N   transient failure, error_kind "exit_N" (retried within the
//                        step's retry policy; 75, EX_TEMPFAIL, is one of these)
//     killed by signal S transient failure, error_kind "signal_S"
//     not started        transient failure, error_kind "spawn_failed"
//   The message of a failure is the tail of the output too: its last
//   `output_tail_bytes` bytes, cut at a UTF-8 character boundary.
//   The step ends when the command has exited AND its output is closed: a
//   background process that keeps stdout or stderr open keeps the step running
//   (redirect its output). At the deadline the whole process group is killed
//   with SIGKILL and NO outcome is sent: the agent gives up silently at the
//   deadline and the scheduler's supervisor recovers the step. A call whose
//   deadline has already passed starts nothing. When the service actor exits,
//   it kills the process groups of the commands still running.
//   Waiting for commands never blocks a CAF scheduler thread: each running
//   command has its own thread that reads its output and reaps it. exec uses
//   real processes and threads: do not use it under the test coordinator.
//
// sleep — the payload is a number of milliseconds in decimal (empty: 0); the
//   service answers success after that long, from a CAF timer (virtual time
//   under the test coordinator). If the sleep would end after the deadline it
//   never answers, like a hung service. Anything else than digits: permanent
//   failure, error_kind "bad_payload".
//
// fail — answers a failure at once, error_kind "fail". Payload "transient" (or
//   empty) or "permanent" chooses the failure kind; "transient:TEXT" and
//   "permanent:TEXT" also set the message to TEXT. Anything else: permanent
//   failure, error_kind "bad_payload".
//
// Time: service_call::deadline is in the workflow's time base, which is the
// actor clock's time_since_epoch plus builtin_options::clock_offset.
#pragma once

#include "actors/workflow/interfaces.hpp"

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace conclave::agents {

struct builtin_options {
  /// Added to the actor clock's time_since_epoch to get the workflow time base
  /// of service_call::deadline (the node sets it so workflow timestamps are wall-clock
  /// nanoseconds since the Unix epoch; 0 under the test coordinator).
  workflow::duration clock_offset{0};
  /// Bytes of the end of an exec step's combined stdout+stderr kept in the outcome
  /// message.
  size_t output_tail_bytes = 2048;
  /// The node's member id, given to exec commands as CONCLAVE_NODE_ID (0: not set).
  uint64_t node_id = 0;
};

/// The exit code of an exec command that reports a permanent failure.
constexpr int exec_permanent_exit_code = 100;

/// Spawns the services of the built-in kinds, keyed by kind name: "exec", "sleep",
/// "fail".
std::map<std::string, workflow::service_actor>
spawn_builtin_services(caf::actor_system& sys, builtin_options opts);

/// The "exec" service alone (real processes and threads).
workflow::service_actor spawn_exec_service(caf::actor_system& sys, builtin_options opts);

/// The "sleep" service alone.
workflow::service_actor spawn_sleep_service(caf::actor_system& sys, builtin_options opts);

/// The "fail" service alone.
workflow::service_actor spawn_fail_service(caf::actor_system& sys);

} // namespace conclave::agents
