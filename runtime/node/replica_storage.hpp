// Where a node's replica keeps its log and its promised term: the one place
// that picks the devices. DIR/replica/log holds the replicated log
// (storage::wal_log_device: the file WAL with group commit; a torn tail is cut
// and moved aside, corruption before the end refuses the start),
// DIR/replica/term the promised term (storage::file_term_file). Both survive
// a restart of the process: a restarted node recovers its log and term and
// catches up from the primary.
#pragma once

#include "actors/replication/replica_host.hpp"
#include "runtime/node/node_config.hpp"
#include "storage/api/log_device.hpp"

#include <memory>
#include <string>

namespace conclave::node {

struct replica_storage {
  std::shared_ptr<store::log_device> device;
  std::shared_ptr<replication::term_file> terms;
  /// Whether the log and term survive a restart of the process.
  bool durable = false;
  /// What recovery did that the operator should know (a torn tail cut and
  /// moved aside); empty if nothing.
  std::string recovery_note;
};

/// Opens (creating if needed) the replica's storage under the data dir.
/// Error: one line for the user (a corrupt log or term file: exit 1).
result<replica_storage> open_replica_storage(const std::string& data_dir);

} // namespace conclave::node
