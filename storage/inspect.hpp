// A read-only check of a store's data directory (what `conclave store check`
// prints): every checkpoint file verified, the log scanned, the state rebuilt
// in memory the way recovery would, and a summary of the collections. Nothing
// on disk changes and no lock is taken, so it also works next to a running
// store (it then sees a moment's state).
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/types.hpp"
#include "storage/log_scan.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace conclave::store {

struct data_dir_check {
  struct checkpoint_file {
    std::filesystem::path path;
    lsn at;
    bool ok = false;
    std::string problem;
  };
  struct collection {
    std::string name;
    collection_kind kind = collection_kind::dictionary;
    std::string key_type, value_type;
    uint64_t items = 0;
  };

  /// Newest first; the first ok one is what recovery would load.
  std::vector<checkpoint_file> checkpoints;
  lsn checkpoint_used;
  log_scan log;
  /// The state recovery would reach.
  lsn recovered;
  /// False if recovery would fail (the log after the checkpoint is gone, or
  /// corrupt before valid records): `problem` says why; `log` says what a
  /// repair would drop (log.drop_*).
  bool recoverable = true;
  std::string problem;
  std::vector<collection> collections;

  /// Nothing to cut, skip or fail on.
  bool clean() const;
};

class store_core;

/// How a directory's checkpoints and log records rebuild its state. The
/// default (check_data_dir without rules) is a store's own: its checkpoint
/// image and records replayed by store_core. A replica of the replicated store
/// keeps other records in the same files (replication entries, a checkpoint
/// that wraps the store image): actors/replication/replica_inspect.hpp.
class replay_rules {
public:
  virtual ~replay_rules() = default;
  /// Loads a checkpoint's image (the bytes inside the checkpoint file).
  virtual result<void> load_checkpoint(std::string_view image) = 0;
  /// Applies the next record; an error means recovery would stop there.
  virtual result<void> apply(const log_record& r) = 0;
  /// The last lsn the state holds.
  virtual lsn last_lsn() const = 0;
  /// The state rebuilt, for the summary of collections.
  virtual store_core& state() = 0;
};

/// bad_argument if `dir` is not a directory.
result<data_dir_check> check_data_dir(const std::filesystem::path& dir);
result<data_dir_check> check_data_dir(const std::filesystem::path& dir,
                                      replay_rules& rules);

/// Whether `dir` holds a store's data directory: a directory with log/ or
/// checkpoints/ in it (a store creates log/ when it is first opened). Tools
/// that must not create or bless a store where there is none check this.
bool is_data_dir(const std::filesystem::path& dir);

} // namespace conclave::store
