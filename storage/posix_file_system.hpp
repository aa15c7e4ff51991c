// posix_file_system: the storage code's file_system (storage/api/
// file_system.hpp) over the disk, with the POSIX calls the storage code makes:
// open/pwrite/write/ftruncate/fdatasync/close on file descriptors,
// std::filesystem for renames, removals, listings and directory creation,
// flock for the lock file. Errors are errno values (system category), so they
// read as before ("No such file or directory").
#pragma once

#include "storage/api/file_system.hpp"
#include "storage/file_util.hpp"

#include <memory>

namespace conclave::store {

/// The disk. `sync` syncs files and directories (tests inject failures or
/// delays with it); empty: fdatasync(2) for files and fsync(2) for
/// directories, as files::write_file_synced and files::sync_dir do.
std::shared_ptr<file_system> make_posix_file_system(files::sync_fn sync = {});

/// The disk with files::default_sync() (fdatasync of files and directories),
/// shared: what the log, its device and the term file use unless they are
/// given another file system.
const std::shared_ptr<file_system>& default_file_system();

} // namespace conclave::store
