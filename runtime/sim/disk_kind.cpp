#include "runtime/sim/disk_kind.hpp"

namespace conclave::sim {

const char* to_string(disk_kind k) {
  return k == disk_kind::files ? "files" : "memory";
}

std::optional<disk_kind> parse_disk_kind(const std::string& s) {
  if (s == "files")
    return disk_kind::files;
  if (s == "memory")
    return disk_kind::memory;
  return std::nullopt;
}

} // namespace conclave::sim
