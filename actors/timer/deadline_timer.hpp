// deadline_timer: the one CAF timer an actor host keeps armed for its pure
// core's next deadline (actors/replication/replica_host.cpp,
// actors/store/store_host.cpp).
//
// The core owns no clock: it reports its earliest deadline, and the host sends
// itself a delayed message for that instant. A host arms again after every
// step; a new timer is sent only when the deadline is earlier than the one
// already armed (a later deadline is covered: the earlier timer fires first and
// the host arms again then). CAF cannot cancel a delayed message, so each timer
// carries a generation number; only the newest generation counts when it
// arrives, older ones are no-ops.
#pragma once

#include "actors/timer/host_clock.hpp"

#include <caf/actor_clock.hpp>
#include <caf/make_message.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace conclave {

/// The actor's clock as time since the clock's epoch (CAF's test coordinator
/// makes it virtual).
template <class Self>
std::chrono::nanoseconds now_of(Self* self) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      self->clock().now().time_since_epoch());
}

class deadline_timer {
public:
  using timestamp = std::chrono::nanoseconds;

  /// A timer to send: the generation it carries and how long from now.
  struct shot {
    uint64_t generation;
    timestamp delay;
  };

  /// The timer to send for deadline `next` at time `now`, or nothing when
  /// there is no deadline or the armed timer fires no later.
  std::optional<shot> arm(std::optional<timestamp> next, timestamp now) {
    if (!next || (at_ && *at_ <= *next))
      return std::nullopt;
    at_ = next;
    auto delay = *next - now;
    if (delay < timestamp::zero())
      delay = timestamp::zero();
    return shot{++generation_, delay};
  }

  /// Arms for `next` and, if a new timer is due, sends `atom` with its
  /// generation to `self` after the delay.
  template <class Self, class Atom>
  void arm(Self* self, std::optional<timestamp> next, Atom atom) {
    if (auto s = arm(next, now_of(self)))
      self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(s->delay), atom,
                         s->generation);
  }

  /// Arms for `next` on `clock` (CAF's when null): the host's time and its
  /// timer both come from that clock.
  template <class Self, class Atom>
  void arm(Self* self, host_clock* clock, std::optional<timestamp> next, Atom atom) {
    if (!clock) {
      arm(self, next, atom);
      return;
    }
    if (auto s = arm(next, clock->now(self)))
      clock->send_later(self, s->delay, caf::make_message(atom, s->generation));
  }

  /// A timer of generation `gen` arrived: true if it is the armed one (then
  /// nothing is armed any more), false for a stale one.
  bool fire(uint64_t gen) {
    if (gen != generation_)
      return false;
    at_.reset();
    return true;
  }

  /// The deadline of the armed timer, if any.
  std::optional<timestamp> armed_at() const { return at_; }

private:
  uint64_t generation_ = 0;
  std::optional<timestamp> at_;
};

} // namespace conclave
