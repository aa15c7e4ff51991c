// The timing of `conclave lock`: what the user asks for (lock_timing_options),
// what check_timing derives and accepts (lock_timing), and the kill schedule
// that the runner and its watchdog process each enforce on their own
// (expiry_schedule).
//
// With s the send time of the last successful acquire/renew and
// safe_until = s + ttl (lease_session.hpp):
//
//   s ------ renew_interval ------> renew ... (renew_deadline = ttl - grace - margin)
//   s + renew_deadline  = safe_until - grace - margin : SIGTERM to CMD's process group
//   safe_until - margin                               : SIGKILL to CMD's process group
//   safe_until                                        : someone else may hold the lease
//
// margin is this host's allowance for its clock and for the time a SIGKILL
// takes to end a process. A renewal that returns after the SIGTERM point does
// not count: SIGTERM is final.
//
// Everything here is plain arithmetic on trivially copyable values (no
// allocation), so the watchdog may use expiry_schedule between fork and _exit.
#pragma once

#include "runtime/lock/lease_session.hpp"

#include <boost/outcome.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace conclave::lock {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

using std::chrono::nanoseconds;

/// The flags: --ttl, --grace, --renew-interval, --margin.
struct lock_timing_options {
  nanoseconds ttl = std::chrono::seconds{10};
  nanoseconds grace = std::chrono::seconds{2};
  std::optional<nanoseconds> renew_interval; ///< default ttl / 3
  std::optional<nanoseconds> margin;         ///< default max(ttl / 50, 50ms)
};

/// The longest duration any of the four may be: a lease term, not a job length.
inline constexpr nanoseconds max_lock_duration = std::chrono::hours{24};
/// The shortest renew interval and margin: below a millisecond, neither a
/// round trip to the store nor a kill can be counted on.
inline constexpr nanoseconds min_lock_step = std::chrono::milliseconds{1};

/// Checked timing: 0 < renew_interval < renew_deadline, 0 <= grace,
/// 0 < margin, ttl = renew_deadline + grace + margin, all <= 24h.
struct lock_timing {
  nanoseconds ttl{0};
  nanoseconds grace{0};
  nanoseconds renew_interval{0};
  nanoseconds margin{0};

  /// How long after the send time of the last successful renewal the runner
  /// may still renew before it starts stopping CMD.
  constexpr nanoseconds renew_deadline() const { return ttl - grace - margin; }
  constexpr clock::time_point terminate_at(clock::time_point safe_until) const {
    return safe_until - grace - margin;
  }
  constexpr clock::time_point kill_at(clock::time_point safe_until) const {
    return safe_until - margin;
  }
  /// The runner's last resort (run_locked.hpp): a kernel timer that SIGKILLs
  /// the runner itself, so PR_SET_PDEATHSIG kills CMD, if the runner has not
  /// done its own SIGKILL by then.
  constexpr clock::time_point self_kill_at(clock::time_point safe_until) const {
    return safe_until - margin / 2;
  }
  /// How long a renewal started at `now` may take: until the SIGTERM point
  /// and at most one renew interval (so a lost request leaves time to retry).
  /// Zero or less: too late to renew.
  nanoseconds renew_budget(clock::time_point now, clock::time_point safe_until) const;
  /// After `unknown`, the next try: a quarter of the renew interval.
  constexpr nanoseconds retry_delay() const { return renew_interval / 4; }
};

/// Defaults filled in and checked; the error is one line naming the flag.
outcome::result<lock_timing, std::string>
check_timing(const lock_timing_options& options);

/// One line for --help and for errors:
/// "ttl 10s = renew-deadline 7.8s + grace 2s + margin 200ms;
///  renew-interval 3.333333333s < renew-deadline 7.8s"
std::string describe_timing(const lock_timing& timing);

/// When to SIGTERM and SIGKILL CMD's process group if nothing else happens;
/// the runner and the watchdog each keep one and agree on it.
class expiry_schedule {
public:
  enum class action { none, terminate, kill };

  expiry_schedule(const lock_timing& timing, clock::time_point safe_until) noexcept
      : timing_(timing), safe_until_(safe_until) {}

  /// A later safe_until from a successful renewal, learned at `now`. Refused
  /// (false) once the SIGTERM point has passed or been acted on: SIGTERM is final.
  bool extend(clock::time_point safe_until, clock::time_point now) noexcept;

  /// The most severe action due at `now` that was not returned before: kill
  /// once the SIGKILL point has passed (also when terminate was skipped),
  /// terminate once the SIGTERM point has (never with grace 0, where kill
  /// comes at the same point), else none.
  action due(clock::time_point now) noexcept;

  /// When the next action falls due; time_point::max() after kill.
  clock::time_point next() const noexcept;

  clock::time_point safe_until() const noexcept { return safe_until_; }
  bool terminated() const noexcept { return terminated_; }
  bool killed() const noexcept { return killed_; }
  const lock_timing& timing() const noexcept { return timing_; }

private:
  lock_timing timing_;
  clock::time_point safe_until_;
  bool terminated_ = false;
  bool killed_ = false;
};

} // namespace conclave::lock
