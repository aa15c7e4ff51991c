// Reads of a bare store_core for tests: one key's committed value
// (replication::read_committed, as the replica reads it).
#pragma once

#include "actors/replication/store_reads.hpp"

#include <optional>
#include <string>

namespace conclave::test {

/// The key's value in the committed state; nullopt if the key or the
/// collection does not exist.
inline std::optional<std::string> committed_value(store::store_core& s,
                                                  const std::string& collection,
                                                  const std::string& key) {
  auto r = replication::read_committed(s, collection, key);
  return r ? std::move(r.value()) : std::nullopt;
}

} // namespace conclave::test
