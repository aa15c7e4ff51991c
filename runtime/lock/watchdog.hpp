// The watchdog: a small process, forked by the runner before CMD may start,
// that enforces the kill schedule (lock_timing.hpp) on CMD's process group by
// itself. It exists because a runner that is stopped (SIGSTOP, Ctrl-Z,
// descheduled) or stuck can signal nothing, while its CMD keeps running.
//
//   * It joins CMD's process group. Signals from the runner to the group do
//     not concern it (it ignores every catchable signal but the synchronous
//     faults); its last act, a SIGKILL to the group, ends it too. Being a
//     member, it keeps the group's id from being reused: kill(-pgid) from the
//     watchdog can only reach CMD's group (see README.md, "Process group ids").
//   * The runner tells it each new safe_until (CLOCK_MONOTONIC nanoseconds,
//     one 8-byte SOCK_SEQPACKET message per renewal; the same clock in every
//     process). It keeps the same expiry_schedule as the runner: SIGTERM to the
//     group at safe_until - grace - margin, SIGKILL at safe_until - margin.
//   * End of file on its socket means the runner is gone (exited, crashed,
//     killed): it SIGKILLs the group at once. The runner itself never closes
//     the socket while CMD runs; at the end it SIGKILLs the group, watchdog
//     included, before it reaps CMD.
//
// Between fork and _exit it uses only async-signal-safe calls (the runner may
// have threads: the lease client's).
#pragma once

#include "runtime/lock/lock_timing.hpp"

#include <sys/types.h>

#include <string>

namespace conclave::lock {

/// The runner's side of a started watchdog.
class watchdog_link {
public:
  watchdog_link() = default;
  watchdog_link(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  watchdog_link(const watchdog_link&) = delete;
  watchdog_link& operator=(const watchdog_link&) = delete;
  watchdog_link(watchdog_link&& other) noexcept;
  watchdog_link& operator=(watchdog_link&& other) noexcept;
  /// Closes the socket (the watchdog then kills CMD's group): callers close
  /// it only after they have killed the group themselves.
  ~watchdog_link();

  pid_t pid() const { return pid_; }

  /// Tells the watchdog a new safe_until; false if it is gone (it never
  /// blocks, and never raises SIGPIPE).
  bool tell(clock::time_point safe_until) const;

  void close();

private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

/// Forks the watchdog for process group `pgid` (which must exist: its leader
/// has called setpgid, or the caller has for it) with the lease good until
/// `safe_until`, and puts it in that group. The watchdog closes every
/// descriptor but its socket and stderr. On failure, an error line and no
/// process.
outcome::result<watchdog_link, std::string>
start_watchdog(pid_t pgid, const lock_timing& timing, clock::time_point safe_until);

} // namespace conclave::lock
