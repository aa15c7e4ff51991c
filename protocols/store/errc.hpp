// Errors of the reliable collections store: one enum, a std::error_category,
// and the Boost.Outcome result type every fallible store API returns. Actors
// convert the same enum to caf::error (see actors/store/type_ids.hpp).
#pragma once

#include <boost/outcome.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace conclave::store {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

enum class errc : uint8_t {
  ok = 0,
  /// No collection of that name exists.
  unknown_collection = 1,
  /// The collection exists with another kind, key type or value type.
  wrong_type = 2,
  /// A key or value is larger than the configured limit.
  too_large = 3,
  /// The transaction was committed or aborted already.
  transaction_finished = 4,
  /// No such transaction (never begun here, or from a previous life).
  unknown_transaction = 5,
  /// A lock could not be granted before the operation's timeout (deadlock
  /// detection): abort the transaction and retry with a new one.
  lock_timeout = 6,
  /// add() found the key present.
  key_exists = 7,
  /// Another operation of the same transaction is still waiting.
  transaction_busy = 8,
  /// A write or fsync failed: the store stopped and must be reopened.
  io_failure = 9,
  /// The store stopped after an earlier failure; nothing is accepted.
  store_failed = 10,
  /// A file or record failed its checksum or does not parse.
  corrupt_data = 11,
  /// A key or value does not deserialize as the collection's type.
  decode_failed = 12,
  /// An argument is invalid (empty name, bad range, ...).
  bad_argument = 13,
  /// Incremental backup impossible: the log since the last backup is gone.
  backup_gap = 14,
  /// Another store (this process or another) has the data directory open.
  directory_in_use = 15,
  /// The transaction's log record would exceed the largest record the log
  /// can read back (max_record_body): nothing was committed; abort it.
  transaction_too_large = 16,
};

const std::error_category& store_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), store_category()};
}

/// Readable name of an error value ("lock_timeout").
const char* to_string(errc e) noexcept;

template <class T>
using result = outcome::result<T, std::error_code>;

} // namespace conclave::store

namespace std {
template <>
struct is_error_code_enum<conclave::store::errc> : true_type {};
} // namespace std
