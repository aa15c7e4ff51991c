#include "protocols/workflow/retry_policy.hpp"

#include <algorithm>
#include <cmath>

namespace conclave::workflow {

result<void> validate(const retry_policy& p) {
  if (p.max_attempts == 0 || p.initial_interval <= duration::zero()
      || p.max_interval < p.initial_interval || !(p.multiplier >= 1.0)
      || !(p.jitter >= 0.0 && p.jitter <= 1.0) || !std::isfinite(p.multiplier))
    return errc::bad_argument;
  return outcome::success();
}

duration base_delay(const retry_policy& p, uint32_t tries_done) {
  // Grow in double and clamp before converting: no overflow for any n.
  double d = static_cast<double>(p.initial_interval.count());
  double cap = static_cast<double>(p.max_interval.count());
  for (uint32_t i = 1; i < tries_done && d < cap; ++i)
    d *= p.multiplier;
  return duration{static_cast<duration::rep>(std::min(d, cap))};
}

retry_decision next_retry(const retry_policy& p, uint32_t tries_done, failure_kind kind,
                          const std::string& error_kind, timestamp now,
                          timestamp deadline, double random01) {
  using why = retry_decision::why;
  retry_decision out;
  if (kind == failure_kind::permanent) {
    out.reason = why::permanent;
    return out;
  }
  if (std::find(p.non_retryable.begin(), p.non_retryable.end(), error_kind)
      != p.non_retryable.end()) {
    out.reason = why::non_retryable_kind;
    return out;
  }
  if (tries_done >= p.max_attempts) {
    out.reason = why::attempts_exhausted;
    return out;
  }
  if (!(random01 >= 0.0))
    random01 = 0.0;
  if (random01 >= 1.0)
    random01 = std::nextafter(1.0, 0.0);
  auto base = base_delay(p, std::max<uint32_t>(tries_done, 1));
  auto factor = 1.0 - p.jitter * random01;
  duration delay{static_cast<duration::rep>(static_cast<double>(base.count()) * factor)};
  if (now + delay >= deadline) {
    out.reason = why::deadline;
    return out;
  }
  out.retry = true;
  out.delay = delay;
  out.reason = why::retry;
  return out;
}

} // namespace conclave::workflow
