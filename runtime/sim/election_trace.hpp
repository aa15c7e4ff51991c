// A message-level trace of one simulated election run (`conclave sim --trace`).
//
// One line per message the network carries (delivered, lost, blocked by a
// partition, or addressed to a crashed node), per "peer down/up" notice, per
// candidate event (election started and why, leadership, acting, suspicion)
// and per fault, in true virtual time. Heartbeats and their acks are left out
// unless asked for: they are most of the traffic and rarely the story.
#pragma once

#include "runtime/sim/election_host.hpp"

#include <iosfwd>

namespace conclave::sim {

struct trace_options {
  /// Also print heartbeats and heartbeat acks.
  bool heartbeats = false;
};

class election_trace final : public election_observer {
public:
  /// Taps `w`'s network and prints to `out` until destroyed.
  election_trace(world& w, std::ostream& out, trace_options opts = {});
  ~election_trace() override;

  unsigned frequent_hooks() const override { return 0; }
  void election_event(node_id, const election::election_event&, timestamp) override;
  void crashed(node_id id, timestamp now) override;
  void restarted(node_id id, timestamp now) override;
  void paused(node_id id, timestamp now, timestamp until) override;

private:
  void message(timestamp now, node_id from, node_id to, const caf::message& m, fate f);
  std::ostream& line(timestamp now);

  world& w_;
  std::ostream& out_;
  trace_options opts_;
};

} // namespace conclave::sim
