#include "runtime/sim/election_trace.hpp"

#include "protocols/election/messages.hpp"

#include <caf/deep_to_string.hpp>

#include <cstdio>
#include <ostream>

namespace conclave::sim {

namespace el = conclave::election;

namespace {

const char* fate_name(fate f) {
  switch (f) {
  case fate::delivered:
    return "";
  case fate::lost:
    return " LOST";
  case fate::blocked:
    return " BLOCKED";
  case fate::dead:
    return " DEAD";
  }
  return "";
}

std::string term_text(const el::term& t) {
  return std::to_string(t.epoch) + "/" + el::to_string(t.leader);
}

} // namespace

election_trace::election_trace(world& w, std::ostream& out, trace_options opts)
    : w_(w), out_(out), opts_(opts) {
  w_.set_tap([this](timestamp now, node_id from, node_id to, const caf::message& m,
                    fate f) { message(now, from, to, m, f); });
}

election_trace::~election_trace() {
  w_.set_tap({});
}

std::ostream& election_trace::line(timestamp now) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%10.3f ", static_cast<double>(now.count()) / 1e6);
  return out_ << buf;
}

void election_trace::message(timestamp now, node_id from, node_id to,
                             const caf::message& m, fate f) {
  if (!opts_.heartbeats
      && (m.match_elements<el::heartbeat_msg>()
          || m.match_elements<el::heartbeat_ack_msg>()))
    return;
  auto text = caf::deep_to_string(m);
  // "(ring_ack_msg(3, 7))" -> "ring_ack_msg(3, 7)"
  if (text.size() >= 2 && text.front() == '(' && text.back() == ')')
    text = text.substr(1, text.size() - 2);
  line(now) << el::to_string(from) << "->" << el::to_string(to) << fate_name(f) << ' '
            << text << '\n';
}

void election_trace::election_event(node_id id, const el::election_event& e,
                                    timestamp now) {
  if (e.kind == el::event_kind::heartbeat_rtt)
    return;
  line(now) << '@' << el::to_string(id) << ' ' << el::to_string(e.kind) << " term "
            << term_text(e.t);
  switch (e.kind) {
  case el::event_kind::election_started:
    out_ << " reason " << el::to_string(e.reason);
    break;
  case el::event_kind::lost_leadership:
    out_ << " why " << el::to_string(e.why);
    break;
  case el::event_kind::leader_changed:
  case el::event_kind::peer_suspected:
  case el::event_kind::peer_trusted:
  case el::event_kind::stale_claim_rejected:
    out_ << " peer " << el::to_string(e.peer);
    break;
  default:
    break;
  }
  out_ << '\n';
}

void election_trace::crashed(node_id id, timestamp now) {
  line(now) << '@' << el::to_string(id) << " CRASHED\n";
}

void election_trace::restarted(node_id id, timestamp now) {
  line(now) << '@' << el::to_string(id) << " RESTARTED incarnation " << w_.incarnation(id)
            << '\n';
}

void election_trace::paused(node_id id, timestamp now, timestamp until) {
  line(now) << '@' << el::to_string(id) << " PAUSED until "
            << static_cast<double>(until.count()) / 1e6 << " ms\n";
}

} // namespace conclave::sim
