// Checkpoint files: DIR/checkpoints/ckpt-<lsn, 20 digits>.ckpt.
//
// File = header + image:
//   "CNCLCKPT" | u32 version (1) | u64 lsn | u64 image size | u32 crc32c(image)
// The image is opaque here (store_core::encode_checkpoint()). A checkpoint is
// written to a .tmp file, synced, renamed into place and the directory
// synced, so a crash leaves either the old set of files or the new one. The
// newest two are kept (the state manager keeps the log since the older one, so
// recovery can fall back to it if the newest is corrupt).
#pragma once

#include "protocols/store/errc.hpp"
#include "protocols/store/types.hpp"
#include "storage/api/file_system.hpp"
#include "storage/file_util.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

result<void> write_checkpoint(file_system& files, const std::filesystem::path& dir,
                              lsn at, std::string_view image);

/// The same on the disk, with `sync` for fdatasync (empty: fdatasync of the
/// file, fsync of the directory).
result<void> write_checkpoint(const std::filesystem::path& dir, lsn at,
                              std::string_view image, const files::sync_fn& sync);

/// Checkpoint files in dir/checkpoints, newest first (none when the directory
/// cannot be read).
std::vector<std::filesystem::path> list_checkpoints(file_system& files,
                                                    const std::filesystem::path& dir);
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);

struct checkpoint_image {
  lsn at;
  std::string image;
};

/// Reads and checks a checkpoint file: corrupt_data on a bad header, size or
/// checksum.
result<checkpoint_image> read_checkpoint(file_system& files,
                                         const std::filesystem::path& file);
result<checkpoint_image> read_checkpoint(const std::filesystem::path& file);

} // namespace conclave::store
