// Who may join: the handshake a node runs on every new connection, before it
// hands out its candidate's handle. The dialing node sends (cluster, its id, its
// candidate); the listening node's gate checks it here and answers with its own
// (cluster, id, candidate), which the dialer checks the same way plus "is it the
// node I meant to reach?". Rejections are dropped and counted
// (conclave_rejected_messages_total{reason}), never fatal.
//
// By itself this is a membership check among honest processes (a misconfigured
// node, a node of another cluster on a reused port), not authentication: CAF
// 0.17's wire protocol trusts its peer before this handshake runs. With TLS,
// each side also proves the id it claims (peer_identity.hpp; docs/design/node.md).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace conclave::node {

enum class rejection {
  none,
  wrong_cluster, ///< the other side belongs to another cluster
  unknown_node,  ///< its id is not a configured member
  same_id,       ///< it claims this node's own id
  wrong_node,    ///< dialer: the address answered with another member's id
};

/// The metric label of a rejection ("wrong_cluster", ...).
std::string_view to_string(rejection r);

struct membership {
  std::string cluster;
  uint64_t self = 0;
  std::set<uint64_t> peers; ///< configured members other than self

  /// Listening side: may node `id` of cluster `cluster` join?
  rejection admit(std::string_view cluster, uint64_t id) const;

  /// Dialing side: the gate at the address of `expected` answered as (cluster, id).
  rejection accept_answer(std::string_view cluster, uint64_t id, uint64_t expected) const;
};

} // namespace conclave::node
