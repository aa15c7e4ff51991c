// Small POSIX file helpers of the store: whole writes, directory fsync, whole
// reads, fixed-width lsn file names. Errors come back as std::error_code from
// errno (system category) so callers can report them. The code that may run
// over a simulated disk goes through a file_system instead
// (storage/api/file_system.hpp); write_file_synced has a version for it.
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/types.hpp"
#include "storage/api/file_system.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace conclave::store::files {

/// fdatasync-like hook: returns 0 or -1 with errno set.
using sync_fn = std::function<int(int fd)>;

/// The default sync: ::fdatasync.
sync_fn default_sync();

/// Writes all of `data` to `fd` (retrying short writes and EINTR).
result<void> write_all(int fd, std::string_view data);

/// Opens `dir` and syncs it (so that created, renamed or deleted entries
/// persist).
result<void> sync_dir(const std::filesystem::path& dir, const sync_fn& sync);

/// Reads a whole file.
result<std::string> read_file(const std::filesystem::path& file);

/// Creates `file` (truncating), writes `data`, syncs, closes.
result<void> write_file_synced(const std::filesystem::path& file, std::string_view data,
                               const sync_fn& sync);

/// The same through `fs`: create or truncate, write, sync (data), close.
result<void> write_file_synced(file_system& fs, const std::filesystem::path& file,
                               std::string_view data);

/// "<prefix><lsn as 20 digits><suffix>".
std::string lsn_name(const std::string& prefix, lsn l, const std::string& suffix);

/// Parses a name made by lsn_name.
std::optional<lsn> parse_lsn_name(const std::string& name, const std::string& prefix,
                                  const std::string& suffix);

/// r's value, or `fallback` when r holds an error.
template <class T>
T value_or(const result<T>& r, T fallback) {
  return r ? r.value() : fallback;
}

/// The error of the last failed system call.
std::error_code last_error();

} // namespace conclave::store::files
