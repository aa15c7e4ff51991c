// Metrics hook of a candidate: every event and message passes through it. The
// default does nothing (unit tests, the simulator); runtime/ implements it with
// prometheus-cpp for nodes.
#pragma once

#include "protocols/election/candidate_core.hpp"

namespace conclave::election {

class election_probe {
public:
  virtual ~election_probe() = default;
  virtual void event(const election_event&, timestamp) {}
  virtual void message_sent(size_t /*type index*/) {}
  virtual void message_received(size_t /*type index*/) {}
  /// A message from a non-member or of the wrong shape was dropped.
  virtual void message_rejected(std::string_view /*reason*/) {}
  /// The candidate's timer fired `lateness` after the deadline it was armed
  /// for (scheduling delay of the clock, the mailbox and the worker thread);
  /// `leader`: whether the core led when it fired (a leader's timer is its
  /// heartbeat round, a follower's its failure detector).
  virtual void timer_fired(duration /*lateness*/, bool /*leader*/) {}
  /// Called after every input, with the core's state.
  virtual void state(const candidate_core&, timestamp) {}
};

} // namespace conclave::election
