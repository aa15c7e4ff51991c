#include "runtime/node/replica_link.hpp"

#include <caf/send.hpp>

#include <variant>

namespace conclave::node {

std::string replica_peer_refusal(const caf::actor& linked_candidate,
                                 const caf::actor& offered_host) {
  if (!offered_host)
    return "unknown_node";
  if (!linked_candidate)
    return "replica_peer_not_linked";
  if (offered_host.node() != linked_candidate.node())
    return "replica_peer_other_node";
  return {};
}

caf::actor peer_replica_transport::dest_of(replication::node_id to) {
  caf::actor dest;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (auto i = peers_.find(to.value); i != peers_.end())
      dest = i->second;
  }
  if (!dest)
    ++lost_;
  return dest;
}

void peer_replica_transport::deliver(replication::node_id to,
                                     const replication::message& m) {
  auto dest = dest_of(to);
  if (!dest)
    return;
  if (auto a = std::get_if<replication::append>(&m))
    shipped_ += a->entries.size();
  std::visit([&](const auto& x) { caf::anon_send(dest, x); }, m);
}

void peer_replica_transport::deliver_chunk(replication::node_id to,
                                           const replication::snapshot_chunk& c) {
  if (auto dest = dest_of(to))
    caf::anon_send(dest, c);
}

void peer_replica_transport::set_peer(uint64_t id, caf::actor host) {
  std::lock_guard<std::mutex> guard{mtx_};
  peers_[id] = std::move(host);
}

bool peer_replica_transport::knows(uint64_t id) const {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = peers_.find(id);
  return i != peers_.end() && i->second;
}

} // namespace conclave::node
