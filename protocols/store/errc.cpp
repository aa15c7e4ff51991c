#include "protocols/store/errc.hpp"

namespace conclave::store {

const char* to_string(errc e) noexcept {
  switch (e) {
  case errc::ok:
    return "ok";
  case errc::unknown_collection:
    return "unknown_collection";
  case errc::wrong_type:
    return "wrong_type";
  case errc::too_large:
    return "too_large";
  case errc::transaction_finished:
    return "transaction_finished";
  case errc::unknown_transaction:
    return "unknown_transaction";
  case errc::lock_timeout:
    return "lock_timeout";
  case errc::key_exists:
    return "key_exists";
  case errc::transaction_busy:
    return "transaction_busy";
  case errc::io_failure:
    return "io_failure";
  case errc::store_failed:
    return "store_failed";
  case errc::corrupt_data:
    return "corrupt_data";
  case errc::decode_failed:
    return "decode_failed";
  case errc::bad_argument:
    return "bad_argument";
  case errc::backup_gap:
    return "backup_gap";
  case errc::directory_in_use:
    return "directory_in_use";
  case errc::transaction_too_large:
    return "transaction_too_large";
  }
  return "unknown";
}

namespace {

class category final : public std::error_category {
public:
  const char* name() const noexcept override { return "conclave.store"; }
  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
    case errc::ok:
      return "success";
    case errc::unknown_collection:
      return "no collection of that name exists";
    case errc::wrong_type:
      return "the collection exists with another kind, key type or value type";
    case errc::too_large:
      return "key or value larger than the configured limit";
    case errc::transaction_finished:
      return "the transaction was already committed or aborted";
    case errc::unknown_transaction:
      return "no such transaction";
    case errc::lock_timeout:
      return "lock not granted before the timeout (possible deadlock): abort and retry";
    case errc::key_exists:
      return "the key is already present";
    case errc::transaction_busy:
      return "another operation of this transaction is still waiting";
    case errc::io_failure:
      return "a write or fsync failed; the store stopped";
    case errc::store_failed:
      return "the store stopped after an earlier failure";
    case errc::corrupt_data:
      return "checksum mismatch or unparsable data";
    case errc::decode_failed:
      return "bytes do not deserialize as the collection's type";
    case errc::bad_argument:
      return "invalid argument";
    case errc::backup_gap:
      return "the log since the last backup was truncated: take a full backup";
    case errc::directory_in_use:
      return "the data directory is open in another store (LOCK is held)";
    case errc::transaction_too_large:
      return "the transaction's log record would exceed the largest record the log "
             "reads back; nothing was committed";
    }
    return "unknown store error";
  }
};

} // namespace

const std::error_category& store_category() noexcept {
  static const category instance;
  return instance;
}

} // namespace conclave::store
