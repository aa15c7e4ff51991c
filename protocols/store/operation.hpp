// The operations of the store as data: what a caller asks (op_request) and what
// it gets back (op_result). The library front-end builds them from typed calls;
// the actor front-end receives them as messages. Keys and values are bytes
// here; storage/collections.hpp maps them to C++ types.
#pragma once

#include "protocols/store/types.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace conclave::store {

enum class operation : uint8_t {
  // dictionary
  try_get = 0,
  contains = 1,
  add = 2,
  add_or_update = 3,
  try_update = 4,
  try_remove = 5,
  count = 6,
  enumerate = 7,
  // queue
  enqueue = 8,
  try_dequeue = 9,
  try_peek = 10,
  queue_count = 11,
};

/// True for operations on a queue, false for those on a dictionary.
constexpr bool is_queue_operation(operation op) {
  return op >= operation::enqueue;
}

struct op_request {
  txn_id txn;
  operation op = operation::try_get;
  std::string collection;
  /// Dictionary key (encoded by the key's codec, which preserves order).
  std::string key;
  /// Value to write (add, add_or_update, try_update, enqueue).
  std::string value;
  /// try_update: the value the key must currently have.
  std::string expected;
  /// try_get and contains: how to read.
  read_mode mode = read_mode::repeatable;
  /// enumerate: half-open key range [from, to); an empty bound is open.
  bool has_from = false;
  std::string from;
  bool has_to = false;
  std::string to;
  /// enumerate: at most this many items, the first ones by key (0: all). A
  /// caller pages on by setting `from` just past the last key it got, so a
  /// poll of a large index costs O(limit), not O(items in range).
  uint32_t limit = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_request& x) {
  return f(caf::meta::type_name("op_request"), x.txn, x.op, x.collection, x.key, x.value,
           x.expected, x.mode, x.has_from, x.from, x.has_to, x.to, x.limit);
}

struct op_result {
  /// The operation waits for a lock (never seen by users: hosts park it).
  bool waiting = false;
  /// try_get, contains, try_remove, try_dequeue, try_peek: an item was found;
  /// try_update: the update happened; add_or_update: the key existed before.
  bool found = false;
  /// try_get, try_remove (old value), try_dequeue, try_peek.
  std::string value;
  /// count, queue_count.
  uint64_t count = 0;
  /// enumerate: (key, value) ordered by key.
  std::vector<std::pair<std::string, std::string>> items;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_result& x) {
  return f(caf::meta::type_name("op_result"), x.waiting, x.found, x.value, x.count,
           x.items);
}

} // namespace conclave::store
