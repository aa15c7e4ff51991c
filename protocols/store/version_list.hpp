// version_list: the versions of one dictionary row in the store core, oldest
// first, in as few bytes as a row can take.
//
// Almost every row holds one version: the commit that writes a row drops the
// versions no snapshot can see at once, and older ones stay only while a
// snapshot older than them is open. So the newest version lives in the list
// itself (24 bytes: its lsn with two flag bits, a pointer to its value bytes,
// a pointer to the older versions, null while there are none), and its value
// is one heap block holding a varint length and the bytes (none for an empty
// value, as index rows have). A std::vector<version> with a std::string per
// version took 24 bytes in the row plus a 48-byte heap block per version
// (64 with glibc's header), before the value's own block: with three rows per
// workflow job, this is most of what a replica keeps per pending job
// (docs/design/workflow.md, "Memory per pending job").
//
// Lsns must stay below 2^62 (the top two bits carry the flags); a log
// would need 2^62 records to reach it.
#pragma once

#include "protocols/store/types.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::store {

class version_list {
public:
  /// One version as readers see it; `value` points into the list (valid
  /// until the list changes).
  struct version {
    lsn at;
    bool present = false; ///< false: a tombstone (the row was removed at `at`)
    std::string_view value;
  };

  version_list() = default;
  version_list(const version_list& other);
  version_list(version_list&& other) noexcept;
  version_list& operator=(const version_list& other);
  version_list& operator=(version_list&& other) noexcept;
  ~version_list();

  bool empty() const { return (newest_ & has_newest) == 0; }
  size_t size() const;
  /// The i-th version, oldest first (i < size()).
  version operator[](size_t i) const;
  /// The newest version (not empty()).
  version back() const;
  /// The newest version at or before `snapshot`, if any.
  std::optional<version> at_snapshot(lsn snapshot) const;

  /// Adds a version newer than every one held (at > back().at).
  void push_back(lsn at, bool present, std::string_view value);
  /// Drops the oldest `n` versions (n < size(): the newest stays).
  void drop_oldest(size_t n);

private:
  static constexpr uint64_t has_newest = uint64_t{1} << 63;
  static constexpr uint64_t newest_present = uint64_t{1} << 62;
  static constexpr uint64_t lsn_mask = newest_present - 1;

  /// A version behind the newest: lsn (with the same flag bits) and value.
  struct older_version {
    uint64_t at_flags = 0;
    char* bytes = nullptr;
  };
  /// The older versions, oldest first (allocated only while there are any).
  using older_list = std::vector<older_version>;

  static char* pack(std::string_view value);
  static std::string_view unpack(const char* bytes);
  static char* copy_bytes(const char* bytes);
  static version view_of(uint64_t at_flags, const char* bytes);
  void clear();

  uint64_t newest_ = 0;
  char* bytes_ = nullptr;
  older_list* older_ = nullptr;
};

} // namespace conclave::store
