// Where a node's replica keeps its log and its promised term: the one place
// that picks the devices, so that switching from memory to the durable file
// devices touches nothing else.
//
// Today: memory_log_device and memory_term_file. The replica survives the
// node's restart only through its peers (a restarted node comes back empty
// and catches up from the primary); a restart of every node loses the data.
// The durable devices (storage::open_replica_log / open_term_file in DIR/
// replica) replace them here once they exist.
#pragma once

#include "actors/replication/replica_host.hpp"
#include "actors/store/log_device.hpp"
#include "runtime/node/node_config.hpp"

#include <memory>
#include <string>

namespace conclave::node {

struct replica_storage {
  std::shared_ptr<store::log_device> device;
  std::shared_ptr<replication::term_file> terms;
  /// Whether the log and term survive a restart of the process.
  bool durable = false;
};

/// Opens (creating if needed) the replica's storage under the data dir.
/// Error: one line for the user (a corrupt log or term file: exit 1).
result<replica_storage> open_replica_storage(const std::string& data_dir);

} // namespace conclave::node
