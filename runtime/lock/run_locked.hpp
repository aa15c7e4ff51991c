// The process side of `conclave lock NAME -- CMD ARGS...`: acquire the lease,
// run CMD in a process group of its own while the lease is held, renew it,
// and make sure nothing of CMD's group runs once someone else may be granted
// the lease. README.md has the schedule, the watchdog and what is not covered.
//
// Processes:
//
//   runner (the caller)                  CMD's process group (pgid = CMD's pid)
//     |-- fork --> CMD (setpgid, PR_SET_PDEATHSIG SIGKILL, waits for "go", execve)
//     |-- fork --> watchdog (joins CMD's group, watchdog.hpp)
//     |-- "go" --> CMD execs; renewals; new safe_until --> watchdog
//
// Exit status: CMD's own (128 + signal if a signal ended it, as a shell
// reports it), or one of lock_exit below.
//
// The runner blocks the calling thread; while a renewal is in flight (at most
// its budget) it does not react to CMD's exit or to SIGINT/SIGTERM. It installs
// handlers for SIGINT, SIGTERM and SIGCHLD and a POSIX timer for the time it
// runs, and restores the handlers before it returns: one run_locked at a time
// per process, called from the thread that stays alive for the whole run
// (PR_SET_PDEATHSIG follows the forking thread, not the process).
#pragma once

#include "runtime/lock/lease_session.hpp"
#include "runtime/lock/lock_timing.hpp"

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace conclave::lock {

struct lock_options {
  std::string name;                  ///< the lease; CMD sees it as CONCLAVE_LOCK_NAME
  lock_timing_options timing;        ///< checked by run_locked (exit 2 if invalid)
  std::chrono::milliseconds wait{0}; ///< --wait: how long acquire may block
};

/// The runner's own exit statuses (next to CMD's 0-255 and 128 + signal).
namespace lock_exit {
/// Invalid timing or no CMD (the command line's usage errors exit 2 as well).
inline constexpr int usage = 2;
/// The lease was not granted within --wait, or the store could not be asked.
inline constexpr int not_acquired = 69; // EX_UNAVAILABLE
/// fork, setpgid or the watchdog failed; or the watchdog ended while CMD ran.
inline constexpr int internal_error = 70; // EX_SOFTWARE
/// The runner (or its watchdog) stopped CMD because the lease was lost or
/// could not be renewed in time; one line on stderr says which.
inline constexpr int lease_lost = 75; // EX_TEMPFAIL
/// CMD was found but cannot be executed / was not found (as in a shell).
inline constexpr int cannot_execute = 126;
inline constexpr int not_found = 127;
} // namespace lock_exit

struct run_hooks {
  /// Called once CMD's process group (pgid == CMD's pid) and the watchdog
  /// exist, just before CMD is let exec.
  std::function<void(pid_t cmd, pid_t watchdog)> started;
};

/// Runs argv (argv[0] looked up in PATH unless it has a '/') under the lease
/// `options.name`, with CONCLAVE_LOCK_NAME and CONCLAVE_LOCK_TOKEN added to
/// the environment and stdin, stdout and stderr inherited. Diagnostics go to
/// `err`, one line each, prefixed "conclave lock: ". Returns the exit status.
int run_locked(const lock_options& options, lease_session& lease,
               const std::vector<std::string>& argv, std::ostream& err,
               const run_hooks& hooks = {});

} // namespace conclave::lock
