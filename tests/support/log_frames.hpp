// One encoded log record (a put of "key<L>" in transaction L at lsn L), as the
// store's log writes it: the unit that log and recovery tests write, cut and
// damage.
#pragma once

#include "protocols/store/log_record.hpp"

#include <cstdint>
#include <string>

namespace conclave::test {

inline std::string record_frame(uint64_t l, size_t value_bytes = 40) {
  store::log_record r;
  r.lsn = store::lsn{l};
  r.txn = store::txn_id{l};
  r.ops.push_back(
      {store::op_kind::put, 1, "key" + std::to_string(l), std::string(value_bytes, 'v')});
  return store::encode_record(r);
}

} // namespace conclave::test
