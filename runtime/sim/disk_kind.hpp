// Which disk a simulated node keeps its records on (world_node_disk.hpp has
// what each kind holds): its data directory on a simulated file system, opened
// by the node's own storage code at every start (files), or records kept in
// memory. The fault plan needs to know: a memory disk keeps records, not
// bytes, so no bit of it can flip.
#pragma once

#include <optional>
#include <string>

namespace conclave::sim {

enum class disk_kind { files, memory };

/// "files" / "memory".
const char* to_string(disk_kind k);
std::optional<disk_kind> parse_disk_kind(const std::string& s);

} // namespace conclave::sim
