// Log records of the store: the unit of the write-ahead log today and of
// replication later (docs/architecture.md, "Persistence": the replication log and the
// local WAL are the same records).
//
// Frame on disk (little endian), 24-byte header then the body:
//
//   u32 body_size   size of `body` (with its batch trailer, if any); the top
//                   bit (batch_flag) says the body ends in a batch trailer
//   u32 crc         CRC-32C over lsn, term and body; with batch_flag, the
//                   same CRC continued over the 4 bytes of the body_size field
//   u64 lsn         dense: every record's lsn is its predecessor's + 1
//   u64 term        leadership term of the writer (1 for a single replica)
//   body            u8 type, then per type:
//                     commit:            u64 txn, u32 n, n x op
//                     create_collection: u32 id, bytes name, u8 kind,
//                                        bytes key_type, bytes value_type
//                   then, with batch_flag only: u64 batch_first
//   op              u8 kind, u32 collection, bytes key, bytes value
//                   (bytes = u32 length + raw bytes)
//
// batch_first is the lsn of the first record written by the same write of the
// write-ahead log (storage/wal.hpp stamps it with stamp_batch; 1 <= batch_first
// <= lsn). Recovery uses it to tell a torn last write from corruption of
// synced data. Frames without the flag (older logs, frames not yet written by
// a log) decode with batch_first 0: unknown.
//
// A record is valid only if it is complete, its crc matches and its body
// parses to the end. decode_record() tells "incomplete" (torn tail) from
// "corrupt" (checksum or parse failure); recovery (storage/log_scan.hpp)
// decides from what follows whether that is a torn tail or corruption.
#pragma once

#include "protocols/store/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

enum class record_type : uint8_t { commit = 1, create_collection = 2 };

/// One change inside a commit record.
enum class op_kind : uint8_t {
  /// Dictionary: set key to value.
  put = 1,
  /// Dictionary: remove key.
  remove = 2,
  /// Queue: append value at the tail.
  enqueue = 3,
  /// Queue: remove the head; key holds the item's sequence number (u64) so
  /// that replay can check it removes the same item.
  dequeue = 4,
};

struct log_op {
  op_kind kind = op_kind::put;
  collection_id collection = 0;
  std::string key;
  std::string value;
};

/// Name, kind and type tags of a collection; fixed at creation.
struct collection_info {
  collection_id id = 0;
  std::string name;
  collection_kind kind = collection_kind::dictionary;
  std::string key_type;
  std::string value_type;
};

struct log_record {
  store::lsn lsn;
  store::term term{1};
  record_type type = record_type::commit;
  /// commit: the transaction and its changes, in the order they apply.
  txn_id txn;
  std::vector<log_op> ops;
  /// create_collection: the new collection.
  collection_info created;
  /// The lsn of the first record of this record's log write (0: unknown, not
  /// encoded). Set by the log when it writes the frame (stamp_batch).
  store::lsn batch_first;
};

constexpr size_t record_header_size = 24;
/// Upper bound of a record body, the one limit of encoder and decoder: the
/// decoder treats a larger size field as corruption, so the store refuses to
/// commit a transaction whose body would be larger (transaction_too_large).
constexpr uint32_t max_record_body = 256u << 20;
/// body_size bit: the body ends in an 8-byte batch trailer (u64 batch_first),
/// not counted against max_record_body.
constexpr uint32_t batch_flag = 1u << 31;
constexpr size_t batch_trailer_size = 8;

/// Encoded size of one op with a key and value of these sizes.
constexpr uint64_t op_size(uint64_t key_bytes, uint64_t value_bytes) {
  return 1 + 4 + 4 + key_bytes + 4 + value_bytes;
}
/// Encoded size of a commit body without its ops, plus `ops_bytes`.
constexpr uint64_t commit_body_size(uint64_t ops_bytes) {
  return 1 + 8 + 4 + ops_bytes;
}

/// The size of r's body once encoded (without the header, with the batch
/// trailer when r.batch_first is set), computed without encoding.
uint64_t encoded_body_size(const log_record& r);

/// Encodes a complete frame (header + body). The body must not exceed
/// max_record_body (check encoded_body_size first).
std::string encode_record(const log_record& r);

/// Sets the batch_first of an encoded, valid frame (adding or replacing its
/// batch trailer), in place: the same bytes encode_record gives with
/// r.batch_first = first. O(1) for a frame without a trailer (the CRC is
/// continued, not recomputed). `first` must be >= 1 and <= the frame's lsn.
void stamp_batch(std::string& frame, lsn first);

enum class decode_status { ok, incomplete, corrupt };

struct decoded_record {
  decode_status status = decode_status::corrupt;
  log_record record;
  /// Frame size in bytes when status == ok.
  size_t size = 0;
};

/// Decodes the frame that starts at the beginning of `in`.
decoded_record decode_record(std::string_view in);

} // namespace conclave::store
