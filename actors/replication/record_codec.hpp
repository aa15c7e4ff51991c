// How the replica host stores replication records in a store log device, and
// how a client transaction becomes a record's payload. No CAF.
//
// Log device mapping (interim: the store's frame has a 64-bit term, the
// replication term is the election's (epoch, leader, incarnation)). A
// replication entry is written as a store commit record:
//   lsn   = entry.at
//   term  = entry.t.epoch
//   txn   = entry.kind (1 transaction, 2 new_primary)
//   ops   = one put on collection 0: key = the full term (3 x u64 LE),
//           value = entry.payload
// so the frame's checksum covers the full term and the payload. Widening the
// frame (docs/design/store.md) would remove this mapping.
//
// Payload of a transaction entry: u32 op count, then per op u8 op_kind
// (0 put, 1 remove, 2 enqueue, 3 dequeue, 4 expect_value, 5 expect_absent;
// records written before queues and conditions used 0/1 for put/remove, the
// same bytes), bytes collection, bytes key, bytes value (bytes = u32 LE
// length + raw).
#pragma once

#include "actors/replication/messages.hpp"
#include "protocols/store/log_record.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::replication {

store::log_record to_log_record(const entry& e);
/// nullopt: the record is not one written by to_log_record (corrupt device).
std::optional<entry> from_log_record(const store::log_record& r);

std::string encode_payload(const std::vector<txn_op>& ops);
/// nullopt: truncated, trailing bytes or an unknown op kind.
std::optional<std::vector<txn_op>> decode_payload(std::string_view in);

} // namespace conclave::replication
