// A short CPU slice for a node's threads (issue 11: false suspicions of a
// live leader). Traced on a loaded 2-core machine, the heartbeats that came
// 35-70 ms late had left the candidate actor on time; the node's one
// caf.multiplexer thread (all socket and TLS I/O) was woken to write them
// and then waited 36 ms for a CPU while another process's threads ran there.
// On Linux 6.12+ (EEVDF) an ordinary, unprivileged thread may ask for a
// shorter slice (sched_attr::sched_runtime, 0.1-100 ms): a waking thread with
// a shorter slice than the running one gets an earlier deadline and preempts
// it. Threads inherit the setting, so asking before the actor system starts
// covers every thread of the node.
#pragma once

#include <chrono>
#include <string>

namespace conclave::node {

/// What a node asks for: well under the kernel's default (0.75 ms x (1 +
/// log2 CPUs), 1.4 ms here), so a node thread that wakes preempts a thread of
/// another process that runs with the default.
inline constexpr std::chrono::microseconds node_cpu_slice{250};

/// Asks the kernel to run the calling thread (and the threads it starts
/// afterwards) with CPU slices of `slice`, keeping its policy and nice value.
/// Returns "" on success, else why not: a slice outside 100 us-100 ms, or a
/// kernel that ignores the request (before 6.12, the slice reads back
/// unchanged).
std::string request_cpu_slice(std::chrono::microseconds slice);

/// The calling thread's requested slice (sched_attr::sched_runtime), or 0.
std::chrono::microseconds current_cpu_slice();

} // namespace conclave::node
