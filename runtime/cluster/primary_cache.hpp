// Where a one-shot client (`conclave kv`) looks first for the primary: a
// small cache file per cluster that remembers the member that last answered
// as the primary, written only when that changes. It is a hint for the order
// in which members are dialed (front_directory_options::first), never an
// answer: a stale, foreign or garbled file costs a detour (the client library
// follows the members' not_primary hints), not a wrong result.
#pragma once

#include <cstdint>
#include <string>

namespace conclave::cluster {

/// $XDG_CACHE_HOME/conclave, else $HOME/.cache/conclave; "" if neither is set.
std::string default_cache_dir();

/// The cache file of the cluster named `cluster` with members `peers`
/// (ID@HOST:PORT,...) in `cache_dir`; "" if `cache_dir` is empty.
std::string primary_cache_file(const std::string& cache_dir, const std::string& cluster,
                               const std::string& peers);

/// The member id the file names; 0 if it is missing or does not hold one.
uint64_t read_primary_cache(const std::string& file);

/// Replaces the file (atomically: a temporary file, then rename) with `id`,
/// creating its directory. Best effort: a failure is ignored (the cache only
/// saves time).
void write_primary_cache(const std::string& file, uint64_t id);

} // namespace conclave::cluster
