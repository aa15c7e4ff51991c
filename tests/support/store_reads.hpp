// Reads of a bare store_core for tests: one key's committed value, as a
// snapshot read in a transaction of its own.
#pragma once

#include "protocols/store/store_core.hpp"

#include <optional>
#include <string>

namespace conclave::test {

/// The key's value in the committed state; nullopt if the key or the
/// collection does not exist.
inline std::optional<std::string> committed_value(store::store_core& s,
                                                  const std::string& collection,
                                                  const std::string& key) {
  if (!s.find_collection(collection))
    return std::nullopt;
  auto t = s.begin();
  store::op_request r;
  r.txn = t;
  r.op = store::operation::try_get;
  r.collection = collection;
  r.key = key;
  r.mode = store::read_mode::snapshot;
  auto res = s.execute(r, store::timestamp::max());
  (void)s.abort(t);
  if (!res || !res.value().found)
    return std::nullopt;
  return res.value().value;
}

} // namespace conclave::test
