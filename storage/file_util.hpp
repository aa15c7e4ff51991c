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

/// The n-byte little-endian number at `at` of `bytes` (n <= 8; the caller
/// checks the size).
inline uint64_t read_le(std::string_view bytes, size_t at, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i)
    x |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
  return x;
}

/// Appends the low n bytes of x, little endian.
inline void append_le(std::string& out, uint64_t x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
}

/// r's value, or `fallback` when r holds an error.
template <class T>
T value_or(const result<T>& r, T fallback) {
  return r ? r.value() : fallback;
}

/// The error of the last failed system call.
std::error_code last_error();

} // namespace conclave::store::files
