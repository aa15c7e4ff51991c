// The lease client as `conclave lock` sees it: acquire, renew, release one
// named lease on the replicated store. The runner (run_locked.hpp) drives it
// and owns everything about the child process; the store client implements it.
//
// Guarantee of the store (fixed): a successful acquire or renew whose request
// was SENT at local monotonic time s means nobody else is granted the lease
// before s + ttl on this machine's monotonic clock (the store already allows
// for clock drift between machines). The runner therefore keeps
// safe_until = send time of the last successful acquire/renew + ttl, taking
// the send time just before it calls acquire() or renew().
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace conclave::lock {

/// CLOCK_MONOTONIC on Linux (libstdc++): the same clock in every process of
/// the machine, which the watchdog process relies on.
using clock = std::chrono::steady_clock;

/// lost: the store says we no longer hold the lease (stale token);
/// unknown: no answer in time.
enum class renew_outcome { ok, lost, unknown };

class lease_session {
public:
  virtual ~lease_session() = default;
  /// Blocks up to `wait` for the lease. On success returns the fencing token;
  /// on failure nullopt and `error` says why.
  virtual std::optional<uint64_t> acquire(std::chrono::milliseconds wait,
                                          std::string& error) = 0;
  /// One renewal; must return within `budget`.
  virtual renew_outcome renew(uint64_t token, std::chrono::milliseconds budget) = 0;
  /// Gives the lease up. The runner calls it exactly once per acquired token,
  /// after every process of CMD's group is gone, also when the lease was lost
  /// or has expired: with a stale token it must be a no-op.
  virtual void release(uint64_t token) = 0;
};

} // namespace conclave::lock
