// file_system: the file operations the storage code performs (the write-ahead
// log and its log device, checkpoint files, the term file, the recovery
// scan), behind one interface, so that the same code runs over the disk and
// over a simulated one.
//
// Implementations: storage/posix_file_system.hpp (the disk: the POSIX calls
// the storage code always made, used by default) and
// runtime/sim/sim_file_system.hpp (one simulated node's disk in memory: lost
// or torn unsynced writes on a crash, directory entries durable only once
// synced, bit flips on request).
//
// Paths are std::filesystem paths as the storage code builds them. Errors are
// std::error_code values: errno values (system category) from the disk,
// std::errc values from a simulation, errc::directory_in_use from
// lock_exclusive.
#pragma once

#include "protocols/store/errc.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

/// A file open for writing. Destroying it closes it (an error on that close
/// is lost: call close() to learn it).
class writable_file {
public:
  virtual ~writable_file() = default;

  /// Writes all of `data` at the handle's position and moves it past them
  /// (write(2); the position starts at 0).
  virtual result<void> write(std::string_view data) = 0;

  /// Writes all of `data` at `offset` (pwrite(2)); the position stays.
  virtual result<void> write_at(uint64_t offset, std::string_view data) = 0;

  /// Sets the file's size (ftruncate(2)).
  virtual result<void> truncate(uint64_t size) = 0;

  /// Makes the file's data and size durable (fdatasync(2)). The directory
  /// entry that names the file is not: see file_system::sync_directory.
  virtual result<void> sync() = 0;

  /// Closes the file; later calls fail.
  virtual result<void> close() = 0;
};

/// Holds an exclusive lock on a file (flock(2)) until destroyed.
class file_lock {
public:
  virtual ~file_lock() = default;
};

class file_system {
public:
  enum class open_mode {
    /// Create the file, or cut an existing one to size 0.
    create_truncate,
    /// The file must exist; its content stays.
    existing,
  };

  virtual ~file_system() = default;

  /// Opens `file` for writing.
  virtual result<std::unique_ptr<writable_file>>
  open_for_write(const std::filesystem::path& file, open_mode mode) = 0;

  /// The whole content of `file`.
  virtual result<std::string> read_file(const std::filesystem::path& file) = 0;

  /// The size of `file` in bytes.
  virtual result<uint64_t> file_size(const std::filesystem::path& file) = 0;

  /// Whether `path` names a file or directory (false when absent; an error
  /// when that cannot be told).
  virtual result<bool> exists(const std::filesystem::path& path) = 0;

  /// The names (not paths) of the entries of directory `dir`, in no order.
  virtual result<std::vector<std::string>>
  list_directory(const std::filesystem::path& dir) = 0;

  /// Creates `dir` and its missing parents (an existing directory is fine).
  virtual result<void> create_directories(const std::filesystem::path& dir) = 0;

  /// Renames `from` to `to`, replacing a file there (rename(2): atomic).
  virtual result<void> rename(const std::filesystem::path& from,
                              const std::filesystem::path& to) = 0;

  /// Removes a file or an empty directory; an absent one is no error.
  virtual result<void> remove(const std::filesystem::path& path) = 0;

  /// Removes `path` and everything under it; an absent one is no error.
  virtual result<void> remove_all(const std::filesystem::path& path) = 0;

  /// Makes the entries of directory `dir` durable (files created, renamed
  /// into it or removed from it), by fsync of the directory.
  virtual result<void> sync_directory(const std::filesystem::path& dir) = 0;

  /// Creates `file` if missing and takes an exclusive lock on it without
  /// waiting: errc::directory_in_use when someone else holds it.
  virtual result<std::unique_ptr<file_lock>>
  lock_exclusive(const std::filesystem::path& file) = 0;
};

} // namespace conclave::store
