// The data directory of a node (--data-dir DIR): whose it is. On first start
// the node records its cluster name and member id in DIR/identity.json; on
// every later start both must match, so that a directory copied from another
// member or another cluster is never served as this replica's log (a replica
// that starts from another member's log would vote with records it never
// acknowledged). The replica's log and term file live beside it
// (replica_storage.hpp).
#pragma once

#include "runtime/node/node_config.hpp"

#include <cstdint>
#include <string>

namespace conclave::node {

/// Why a data directory was refused.
enum class data_dir_problem {
  none,
  /// Recorded for another cluster or member id: bad input (exit 2).
  other_owner,
  /// identity.json unreadable or not one: a corrupt file (exit 1); never
  /// overwritten.
  corrupt,
  /// The directory or file cannot be created or written (exit 1).
  io,
};

struct data_dir_claim {
  data_dir_problem problem = data_dir_problem::none;
  /// One line for the user when problem != none.
  std::string message;
  /// True if this start wrote identity.json (a fresh directory).
  bool fresh = false;
};

/// Creates DIR if missing and records (cluster, id) there on first start;
/// otherwise checks that they match what it recorded.
data_dir_claim claim_data_dir(const std::string& dir, const std::string& cluster,
                              uint64_t id);

} // namespace conclave::node
