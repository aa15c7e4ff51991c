// term_file: where a replica keeps the term it promised (the highest term it
// has seen), durably. The replica host saves it before it sends anything that
// depends on it, and reads it once when it starts. Plain C++ (no CAF), so that
// storage/ can implement it without actor headers: memory_term_file
// (replica_host.hpp) for tests, storage::open_term_file for a data directory.
#pragma once

#include "protocols/replication/types.hpp"
#include "protocols/store/errc.hpp"

namespace conclave::replication {

/// Where a replica keeps its promised term durably.
class term_file {
public:
  virtual ~term_file() = default;
  /// Durable when it returns successfully.
  virtual store::result<void> save(const term& t) = 0;
  /// The last term saved (term zero if none ever was). A file that cannot be
  /// read back is an error when it is opened, not here.
  virtual term load() const = 0;
};

} // namespace conclave::replication
