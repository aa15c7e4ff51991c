// One key of a replica's store: the read that the reserved tables (leases,
// client sessions) and the replica's read path all make.
#pragma once

#include "protocols/store/store_core.hpp"

#include <optional>
#include <string>

namespace conclave::replication {

/// The key's value as transaction `txn` reads it (`mode`); nullopt when the
/// collection or the key does not exist; the store's error otherwise.
inline store::result<std::optional<std::string>>
read_key(store::store_core& s, store::txn_id txn, const std::string& collection,
         const std::string& key, store::read_mode mode = store::read_mode::repeatable) {
  if (!s.has_collection(collection))
    return std::optional<std::string>{};
  store::op_request r;
  r.txn = txn;
  r.op = store::operation::try_get;
  r.collection = collection;
  r.key = key;
  r.mode = mode;
  auto res = s.execute(r, store::timestamp::max());
  if (!res)
    return res.error();
  if (!res.value().found)
    return std::optional<std::string>{};
  return std::optional<std::string>{std::move(res.value().value)};
}

/// The key's value in the committed state: a snapshot read in a
/// transaction of its own.
inline store::result<std::optional<std::string>>
read_committed(store::store_core& s, const std::string& collection,
               const std::string& key) {
  auto txn = s.begin();
  auto r = read_key(s, txn, collection, key, store::read_mode::snapshot);
  (void)s.abort(txn);
  return r;
}

} // namespace conclave::replication
