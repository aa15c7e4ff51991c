#include "protocols/election/detector.hpp"

#include <algorithm>
#include <cmath>

namespace conclave::election {

namespace {

/// P(X > y) for a standard normal X.
double upper_tail(double y) {
  return 0.5 * std::erfc(y / std::sqrt(2.0));
}

} // namespace

double phi_threshold_to_sigmas(double threshold) {
  const double target = std::pow(10.0, -threshold);
  double lo = -10, hi = 40; // upper_tail is decreasing in y
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    if (upper_tail(mid) > target)
      lo = mid;
    else
      hi = mid;
  }
  return hi;
}

failure_detector::failure_detector(detector_config cfg, duration expected_interval)
    : cfg_(cfg), expected_(expected_interval) {
  if (cfg_.kind == detector_kind::phi)
    y_star_ = phi_threshold_to_sigmas(cfg_.phi_threshold);
}

void failure_detector::reset(timestamp now) {
  last_ = now;
  samples_.clear();
  sum_ = sum_sq_ = 0;
}

void failure_detector::heartbeat(timestamp now) {
  if (now > last_ && cfg_.kind == detector_kind::phi) {
    double gap = static_cast<double>((now - last_).count());
    samples_.push_back(gap);
    sum_ += gap;
    sum_sq_ += gap * gap;
    if (samples_.size() > std::max<size_t>(cfg_.window, 1)) {
      double old = samples_.front();
      samples_.pop_front();
      sum_ -= old;
      sum_sq_ -= old * old;
    }
  }
  last_ = std::max(last_, now);
}

void failure_detector::postpone(timestamp until) {
  auto due = suspect_at();
  if (until > due)
    last_ += until - due;
}

duration failure_detector::mean_interval() const {
  if (samples_.empty())
    return expected_;
  return duration{static_cast<int64_t>(sum_ / samples_.size())};
}

duration failure_detector::std_dev() const {
  double sd = 0;
  if (samples_.size() >= 2) {
    double n = static_cast<double>(samples_.size());
    double mean = sum_ / n;
    sd = std::sqrt(std::max(0.0, sum_sq_ / n - mean * mean));
  } else {
    sd = static_cast<double>(expected_.count()) / 4;
  }
  sd = std::max(sd, static_cast<double>(cfg_.min_std_dev.count()));
  return duration{static_cast<int64_t>(sd)};
}

timestamp failure_detector::suspect_at() const {
  if (cfg_.kind == detector_kind::fixed)
    return last_ + cfg_.timeout;
  auto mean = mean_interval();
  auto silence = mean + duration{static_cast<int64_t>(y_star_ * std_dev().count())}
                 + cfg_.acceptable_pause;
  return last_ + std::max(silence, cfg_.timeout);
}

double failure_detector::phi(timestamp now) const {
  double silence = static_cast<double>((now - last_).count());
  if (cfg_.kind == detector_kind::fixed)
    return silence / static_cast<double>(cfg_.timeout.count());
  double y = (silence - static_cast<double>(cfg_.acceptable_pause.count())
              - static_cast<double>(mean_interval().count()))
             / static_cast<double>(std_dev().count());
  double p = upper_tail(y);
  if (p <= 1e-300)
    return 300;
  return -std::log10(p);
}

} // namespace conclave::election
