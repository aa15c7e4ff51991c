// Store requests for tests: one dictionary operation on collection "d" (or
// another), built in one call instead of field by field in every test file.
#pragma once

#include "protocols/store/operation.hpp"

#include <string>
#include <utility>

namespace conclave::test {

inline store::op_request dictionary_request(store::txn_id t, store::operation op,
                                            std::string key, std::string value = {},
                                            std::string expected = {},
                                            std::string collection = "d") {
  store::op_request r;
  r.txn = t;
  r.op = op;
  r.collection = std::move(collection);
  r.key = std::move(key);
  r.value = std::move(value);
  r.expected = std::move(expected);
  return r;
}

} // namespace conclave::test
