// Which sequence numbers of one stream were seen, when they may arrive out of
// order and more than once: the highest, and the 64 below it one by one. A
// high-water mark alone takes a late (retried or overtaken) message for a
// copy. Used for a Ring sender's hops (ring.cpp) and for a follower's
// heartbeat acks (candidate_core.cpp). Pure, no allocation.
#pragma once

#include <cstdint>

namespace conclave::election {

class seq_window {
public:
  static constexpr uint64_t span = 64;

  enum class verdict {
    fresh,   ///< first time seen: recorded
    copy,    ///< seen before
    too_old, ///< more than `span` below the highest: cannot tell
  };

  verdict see(uint64_t seq) {
    if (!any_ || seq > highest_) {
      if (any_) {
        // The old highest becomes bit shift - 1; the ones below it move up.
        auto shift = seq - highest_;
        below_ = shift >= span ? 0 : below_ << shift;
        if (shift <= span)
          below_ |= uint64_t{1} << (shift - 1);
      }
      highest_ = seq;
      any_ = true;
      return verdict::fresh;
    }
    if (seq == highest_)
      return verdict::copy;
    auto bit = highest_ - seq - 1;
    if (bit >= span)
      return verdict::too_old;
    auto mask = uint64_t{1} << bit;
    if ((below_ & mask) != 0)
      return verdict::copy;
    below_ |= mask;
    return verdict::fresh;
  }

  /// Forgets everything (a new incarnation of the sender).
  void reset() { *this = seq_window{}; }

private:
  bool any_ = false;
  uint64_t highest_ = 0;
  uint64_t below_ = 0; ///< bit i: highest_ - 1 - i was seen
};

} // namespace conclave::election
