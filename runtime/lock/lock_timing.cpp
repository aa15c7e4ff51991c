#include "runtime/lock/lock_timing.hpp"

#include "runtime/lock/duration_text.hpp"

#include <algorithm>

namespace conclave::lock {

nanoseconds lock_timing::renew_budget(clock::time_point now,
                                      clock::time_point safe_until) const {
  return std::min(renew_interval, terminate_at(safe_until) - now);
}

outcome::result<lock_timing, std::string>
check_timing(const lock_timing_options& options) {
  auto text = [](nanoseconds d) { return format_duration(d); };
  auto in_range = [&](const char* flag, nanoseconds d, nanoseconds min) -> std::string {
    if (d < min)
      return std::string{"--"} + flag + " " + text(d) + " is too short: at least "
             + text(min);
    if (d > max_lock_duration)
      return std::string{"--"} + flag + " " + text(d) + " is too long: at most "
             + text(max_lock_duration);
    return {};
  };
  lock_timing t;
  t.ttl = options.ttl;
  t.grace = options.grace;
  if (auto e = in_range("ttl", t.ttl, nanoseconds{1}); !e.empty())
    return e;
  if (auto e = in_range("grace", t.grace, nanoseconds{0}); !e.empty())
    return e;
  t.renew_interval = options.renew_interval.value_or(t.ttl / 3);
  t.margin = options.margin.value_or(
      std::max<nanoseconds>(t.ttl / 50, std::chrono::milliseconds{50}));
  if (auto e = in_range("margin", t.margin, min_lock_step); !e.empty())
    return e;
  // All three are in [0, 24h]: the sums below cannot overflow.
  if (t.ttl <= t.grace + t.margin)
    return "--ttl " + text(t.ttl) + " must be longer than grace " + text(t.grace)
           + " + margin " + text(t.margin) + " (no time would be left to renew in)";
  if (auto e = in_range("renew-interval", t.renew_interval, min_lock_step); !e.empty())
    return e;
  if (t.renew_interval >= t.renew_deadline())
    return "--renew-interval " + text(t.renew_interval)
           + " must be shorter than the renew deadline " + text(t.renew_deadline())
           + " (ttl " + text(t.ttl) + " - grace " + text(t.grace) + " - margin "
           + text(t.margin) + ")";
  return t;
}

std::string describe_timing(const lock_timing& t) {
  auto text = [](nanoseconds d) { return format_duration(d); };
  return "ttl " + text(t.ttl) + " = renew-deadline " + text(t.renew_deadline())
         + " + grace " + text(t.grace) + " + margin " + text(t.margin)
         + "; renew-interval " + text(t.renew_interval) + " < renew-deadline "
         + text(t.renew_deadline());
}

bool expiry_schedule::extend(clock::time_point safe_until,
                             clock::time_point now) noexcept {
  if (terminated_ || killed_ || now >= timing_.terminate_at(safe_until_))
    return false;
  if (safe_until > safe_until_)
    safe_until_ = safe_until;
  return true;
}

expiry_schedule::action expiry_schedule::due(clock::time_point now) noexcept {
  if (killed_)
    return action::none;
  if (now >= timing_.kill_at(safe_until_)) {
    terminated_ = killed_ = true;
    return action::kill;
  }
  if (!terminated_ && now >= timing_.terminate_at(safe_until_)) {
    terminated_ = true;
    return action::terminate;
  }
  return action::none;
}

clock::time_point expiry_schedule::next() const noexcept {
  if (killed_)
    return clock::time_point::max();
  if (terminated_)
    return timing_.kill_at(safe_until_);
  return timing_.terminate_at(safe_until_);
}

} // namespace conclave::lock
