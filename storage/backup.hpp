// Backups of a store's data directory, and restore into a new one.
//
// backup_dir/NNNNNN-full/  the newest checkpoint file and the log records after
//                          it up to `upto` (log.wal), plus MANIFEST
// backup_dir/NNNNNN-incr/  the log records since the previous backup's `to` up
//                          to `upto`, plus MANIFEST
// MANIFEST (text): "conclave-backup 1", "kind full|incremental", "from N",
// "to N", then one "file NAME SIZE CRC32C" line per file.
//
// Each backup is written under a hidden temporary name and renamed into place
// when complete. Only records up to `upto` (the durable lsn when the backup starts) are
// copied, so backups run while the store keeps writing. An incremental backup
// needs the log since the previous backup: if a checkpoint truncated it,
// backup_incremental fails with backup_gap (take a full one).
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/types.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

struct backup_info {
  /// "full", "incremental" or, for restore, "restore".
  std::string kind;
  lsn from, to;
  /// Empty if nothing was written (an incremental backup with nothing new).
  std::filesystem::path path;
  uint64_t bytes = 0;
};

/// A backup's MANIFEST.
struct backup_manifest {
  std::string kind;
  lsn from, to;
  struct file {
    std::string name;
    uint64_t size = 0;
    uint32_t crc = 0;
  };
  std::vector<file> files;
};

/// Parses a MANIFEST's text: corrupt_data for anything malformed (never an
/// exception).
result<backup_manifest> parse_backup_manifest(std::string_view text);

result<backup_info> backup_full(const std::filesystem::path& data_dir,
                                const std::filesystem::path& backup_dir, lsn upto);

/// bad_argument if backup_dir holds no backup yet. With nothing new since
/// the previous backup (`upto` is its end), writes nothing and returns an
/// empty `path`.
result<backup_info> backup_incremental(const std::filesystem::path& data_dir,
                                       const std::filesystem::path& backup_dir, lsn upto);

/// Rebuilds a data directory from the newest full backup in `backup_dir` and
/// every incremental after it. `new_data_dir` must be absent or empty
/// (bad_argument); a damaged or discontinuous backup gives corrupt_data.
result<backup_info> restore_backup(const std::filesystem::path& backup_dir,
                                   const std::filesystem::path& new_data_dir);

} // namespace conclave::store
