// checkpoint_image: what a replica's checkpoint holds, as bytes. A replica
// host writes one to its log device (log_device::checkpoint) and streams the
// same bytes to a replica that needs records its log no longer holds
// (snapshot_chunk, replica_host.hpp). No CAF.
//
// Format (integers little-endian):
//   "CRPLCKPT" | u32 version (1) | u64 lsn | u64 term epoch | u64 term leader
//   | u64 term incarnation | u64 digest | u64 store image size | store image
//   | u32 crc32c of every byte before it
// `lsn` and `term` are the last record the checkpoint covers (the replica log's
// base afterwards); `digest` is the host's chained digest of the records
// applied through lsn (replica_status::digest), so that a replica that
// installs the checkpoint reports the same digest as one that applied the
// records; the store image is store_core::encode_checkpoint() of the applied
// state at lsn. The file device wraps these bytes in its own checkpoint file
// (storage/checkpoint_file.hpp: header, size and a second checksum).
#pragma once

#include "protocols/replication/types.hpp"
#include "protocols/store/errc.hpp"

#include <string>
#include <string_view>

namespace conclave::replication {

struct checkpoint_image {
  lsn at;
  term at_term;
  uint64_t digest = 0;
  std::string store_image;
};

std::string encode_checkpoint_image(const checkpoint_image& c);

/// corrupt_data: wrong magic or version, a size that does not add up, or a
/// checksum that does not match. Never an empty image for bad bytes.
store::result<checkpoint_image> decode_checkpoint_image(std::string_view bytes);

} // namespace conclave::replication
