// Retry policy of a step, applied by its agent inside one dispatch (docs/patterns.md,
// "Scheduler Agent Supervisor": the agent retries transient faults, and gives
// up — replying nothing — when it cannot finish before the deadline).
//
// Delay before try n+1 (n >= 1 tries done):
//   base  = min(max_interval, initial_interval * multiplier^(n-1))
//   delay = base * (1 - jitter * r)          r in [0, 1), given by the caller
// so the jitter spreads retries of many agents over [base*(1-jitter), base].
// No retry when: the failure is permanent or its error kind is listed as
// non-retryable, max_attempts tries are done, or now + delay is not before the
// deadline (never past the deadline). The random value comes in as an argument:
// the core draws nothing itself, so a seed replays a run exactly.
#pragma once

#include "protocols/workflow/errc.hpp"
#include "protocols/workflow/types.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conclave::workflow {

struct retry_policy {
  /// Tries per dispatch, the first included (1: no retry).
  uint32_t max_attempts = 3;
  duration initial_interval = std::chrono::milliseconds{10};
  /// Growth factor per retry (>= 1).
  double multiplier = 2.0;
  /// Upper bound of one delay.
  duration max_interval = std::chrono::seconds{1};
  /// Fraction of the delay taken off at random, in [0, 1].
  double jitter = 0.2;
  /// Error kinds (as reported by the service) that are never retried.
  std::vector<std::string> non_retryable;

  friend bool operator==(const retry_policy& a, const retry_policy& b) {
    return a.max_attempts == b.max_attempts && a.initial_interval == b.initial_interval
           && a.multiplier == b.multiplier && a.max_interval == b.max_interval
           && a.jitter == b.jitter && a.non_retryable == b.non_retryable;
  }
};

/// bad_argument when the policy cannot be used (0 attempts, negative or zero
/// intervals, multiplier < 1, jitter outside [0, 1]).
result<void> validate(const retry_policy& p);

/// What the agent does after a failed try.
struct retry_decision {
  /// false: give up (report a permanent failure at once, or stay silent when
  /// the deadline or the attempts ran out — see `reason`).
  bool retry = false;
  /// When retry: how long to wait before the next try.
  duration delay{0};
  enum class why : uint8_t {
    retry = 0,
    permanent = 1,
    non_retryable_kind = 2,
    attempts_exhausted = 3,
    deadline = 4,
  } reason = why::retry;
};

/// Decides after `tries_done` failed tries (>= 1) whether and when to retry.
/// `random01` is a value in [0, 1) (clamped) from the host's seeded generator.
retry_decision next_retry(const retry_policy& p, uint32_t tries_done, failure_kind kind,
                          const std::string& error_kind, timestamp now,
                          timestamp deadline, double random01);

/// The un-jittered delay after `tries_done` tries (exposed for tests and docs).
duration base_delay(const retry_policy& p, uint32_t tries_done);

} // namespace conclave::workflow
