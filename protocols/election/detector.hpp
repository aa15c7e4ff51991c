// Heartbeat failure detectors: a fixed timeout, and phi accrual.
//
// Both answer one question for the host's timer: "if nothing more arrives, at what
// time does this peer become suspected?" (`suspect_at`). Suspicion is not death:
// a heartbeat arriving after that time makes the peer trusted again.
//
// Phi accrual (Hayashibara, Défago, Yared, Katayama, SRDS 2004) models heartbeat
// inter-arrival times as a normal distribution with the mean and standard deviation
// of a sliding window, and reports phi(Δ) = -log10(P(interval > Δ)) for the
// current silence Δ. Because phi depends on Δ only through y = (Δ - μ) / σ, the
// silence at which phi reaches the threshold is μ + y*·σ with a y* that depends on
// the threshold alone; it is computed once.
#pragma once

#include "protocols/election/config.hpp"

#include <deque>
#include <optional>

namespace conclave::election {

class failure_detector {
public:
  explicit failure_detector(detector_config cfg, duration expected_interval);

  /// A heartbeat from the watched peer arrived at `now`.
  void heartbeat(timestamp now);

  /// Forgets history and starts watching from `now` as if a heartbeat had arrived.
  void reset(timestamp now);

  /// Moves suspect_at() to `until` (if later) without a sample: the silence
  /// before it is not held against the peer (the watcher itself was not
  /// running). The next heartbeat's inter-arrival sample is measured from the
  /// moved point, so the phi model does not learn the watcher's stall.
  void postpone(timestamp until);

  /// The time at which the peer becomes suspected if nothing arrives before.
  timestamp suspect_at() const;

  bool suspected(timestamp now) const { return now >= suspect_at(); }

  /// Current phi (phi detector) or silence / timeout (fixed), for metrics.
  double phi(timestamp now) const;

  timestamp last_heartbeat() const { return last_; }

  /// Mean inter-arrival time observed (expected interval before any sample).
  duration mean_interval() const;

private:
  duration std_dev() const;

  detector_config cfg_;
  duration expected_;
  timestamp last_{0};
  std::deque<double> samples_; ///< inter-arrival times in nanoseconds
  double sum_ = 0;
  double sum_sq_ = 0;
  double y_star_ = 0; ///< standardized silence at which phi == threshold
};

/// The standardized silence y at which phi reaches `threshold` under the normal
/// model: 1 - Φ(y) = 10^-threshold.
double phi_threshold_to_sigmas(double threshold);

} // namespace conclave::election
