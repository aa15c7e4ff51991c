// Round-trip time estimator (Jacobson/Karels, as TCP's RFC 6298): a smoothed
// round trip and its mean deviation, from which retransmission timeouts are
// derived. Fed with samples of acknowledged messages (Ring hop acks, heartbeat
// acks); a sample from a retransmitted message is ambiguous and should be left
// out or taken from the first send (an overestimate, which errs on the safe side).
// Pure: no clock, the caller passes measured durations.
#pragma once

#include "protocols/election/types.hpp"

#include <algorithm>
#include <cstdint>

namespace conclave::election {

class rtt_estimator {
public:
  /// Adds one measured round trip.
  void sample(duration rtt) {
    if (rtt < duration{0})
      return;
    if (samples_ == 0) {
      srtt_ = rtt;
      rttvar_ = rtt / 2;
    } else {
      auto err = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
      rttvar_ = (rttvar_ * 3 + err) / 4;
      srtt_ = (srtt_ * 7 + rtt) / 8;
    }
    ++samples_;
    max_ = std::max(max_, rtt);
  }

  bool empty() const { return samples_ == 0; }
  uint64_t samples() const { return samples_; }
  /// Smoothed round trip (0 before the first sample).
  duration smoothed() const { return srtt_; }
  duration deviation() const { return rttvar_; }
  /// Largest sample seen.
  duration max() const { return max_; }

  /// srtt + max(4 * rttvar, srtt / 4) within [floor, cap]; `floor` before the
  /// first sample. The srtt / 4 term keeps a margin when every round trip
  /// measured the same (rttvar decays to 0 and a timeout equal to the round
  /// trip would race the ack).
  duration timeout(duration floor, duration cap) const {
    if (samples_ == 0)
      return std::min(floor, cap);
    auto margin = std::max(4 * rttvar_, srtt_ / 4);
    return std::clamp(srtt_ + margin, floor, std::max(floor, cap));
  }

private:
  duration srtt_{0};
  duration rttvar_{0};
  duration max_{0};
  uint64_t samples_ = 0;
};

} // namespace conclave::election
