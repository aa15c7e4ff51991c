// What recovery would find in a replica's data directory (`conclave store
// check` on DATA_DIR/replica): the replica keeps the store's file formats
// (WAL segments, checkpoint files) but other contents in them: each log record
// is a replication entry (record_codec.hpp) and each checkpoint wraps the
// store image (checkpoint_image.hpp). These rules replay them as the replica
// host's recovery does (replica_host.cpp, make_host): the newest checkpoint
// that decodes, then entries in lsn order, transactions applied to the store
// state (txn_apply.hpp). A record that is not an entry, an lsn out of order or
// a transaction payload that does not decode stops the replay there. No CAF.
#pragma once

#include "protocols/replication/types.hpp"
#include "protocols/store/store_core.hpp"
#include "storage/inspect.hpp"

#include <filesystem>

namespace conclave::replication {

class replica_replay_rules final : public store::replay_rules {
public:
  store::result<void> load_checkpoint(std::string_view image) override;
  store::result<void> apply(const store::log_record& r) override;
  lsn last_lsn() const override { return last_; }
  store::store_core& state() override { return core_; }

private:
  store::store_core core_;
  lsn last_;
};

/// Whether `dir` is a replica's data directory: a store's files beside the
/// replica's `term` file, or named `replica` (where a node keeps it:
/// replica_storage.cpp), or holding the `amnesiac` mark.
bool is_replica_dir(const std::filesystem::path& dir);

} // namespace conclave::replication
