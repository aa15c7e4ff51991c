// The CPU priority a node asks for (`conclave node --nice N`).
//
// A leader whose process waits for a CPU falls silent to its followers as a
// stopped one does, and no detector can tell the two apart; on a host where
// other processes keep every core busy, the node's share of the CPU is what
// keeps its heartbeats on time. `--nice N` asks the kernel for that share: the
// nice value of the node's threads (set before the actor system starts, so
// every thread inherits it) and, when the node leads its own session (`cluster
// up` starts each node with setsid; a systemd service is one too), the nice
// value of its session's autogroup, which is what weighs against other
// sessions when the kernel groups processes by session
// (/proc/sys/kernel/sched_autogroup_enabled). A negative N needs
// CAP_SYS_NICE (or RLIMIT_NICE); without it the node runs at its priority
// as started and logs why.
#pragma once

#include <string>

namespace conclave::node {

/// What apply_nice did: a line for the node's log.
struct nice_result {
  bool ok = false;
  std::string what;
};

/// Sets the nice value of the calling thread (threads it starts later inherit
/// it), with `all_threads` of every thread of the process, and, if the
/// process leads its session and autogroups are on, its autogroup's.
/// Without `all_threads` (tests) only the calling thread's. `autogroup_file`
/// is /proc/self/autogroup but for tests. 0 changes nothing and reports
/// nothing (ok, empty `what`).
nice_result apply_nice(int nice, bool all_threads = true,
                       const std::string& autogroup_file = "/proc/self/autogroup");

/// The calling thread's nice value.
int current_nice();

} // namespace conclave::node
