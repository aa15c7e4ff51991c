#include "runtime/node/node_composition.hpp"

namespace conclave::node {

composed_node compose_node(caf::actor_system& sys, composition_options opts) {
  composed_node out;
  auto& co = opts.candidate;
  co.probe = opts.probe;
  if (!co.clock)
    co.clock = std::make_shared<caf_host_clock>();
  if (opts.replica) {
    auto& ro = *opts.replica;
    ro.self = co.id;
    ro.members.clear();
    ro.members.push_back(co.id);
    for (auto& p : co.peers)
      if (p != co.id)
        ro.members.push_back(p);
    auto transport = ro.transport;
    out.host = replication::spawn_replica_host(sys, std::move(ro));
    out.board = std::make_shared<leadership_board>();
    auto& fo = opts.front;
    fo.host = out.host;
    fo.probe = opts.probe;
    fo.transport = transport;
    fo.board = out.board;
    fo.clock = co.clock; // the board's lease is on the candidate's clock
    out.front = spawn_replica_front(sys, std::move(fo));
    out.board->set_front(out.front);
    // A replica follows the candidate's leadership.
    co.probe = std::make_shared<leadership_relay>(opts.probe, out.host, out.board);
  }
  out.candidate = election::spawn_candidate(sys, std::move(co));
  if (out.board)
    out.board->set_candidate(caf::actor_cast<caf::actor>(out.candidate));
  return out;
}

} // namespace conclave::node
