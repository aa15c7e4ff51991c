// What `conclave job submit` reads: steps given on the command line
// ("KIND[:PAYLOAD]") or a JSON spec file, turned into a workflow::job_spec
// that the client actor accepts (docs/jobs.md, "Job spec files").
//
// Everything here is pure: no actor system, no cluster. Bad input of any
// shape (garbage, huge files, deep nesting, wrong types, unknown fields,
// limits of protocols/workflow/records.hpp) is answered with ONE line that
// names the problem; the caller exits 2 with it and submits nothing. Whether
// a kind is served is checked later, against the kinds the nodes registered
// (check_kinds), since only a running cluster knows them.
#pragma once

#include "protocols/workflow/records.hpp"

#include <boost/outcome.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::cli::job {

namespace outcome = BOOST_OUTCOME_V2_NAMESPACE;

template <class T>
using parsed = outcome::result<T, std::string>;

/// The flags of `job submit` that shape the spec. A flag not given is
/// nullopt: the spec file's value (or the default) applies.
struct submit_flags {
  std::optional<std::string> id;
  /// A step's completion timeout (per dispatch); default 30 s.
  std::optional<std::chrono::nanoseconds> timeout;
  /// Tries per dispatch (the retry policy's max_attempts); default 3.
  std::optional<uint32_t> attempts;
  std::optional<uint32_t> failure_threshold;
};

inline constexpr std::chrono::seconds default_step_timeout{30};
/// Most tries per dispatch a step may ask for.
inline constexpr uint32_t max_step_attempts = 1000;

/// Largest spec file read: a job's specs are bounded by
/// record_limits::max_spec_bytes (512 KiB); JSON escaping can grow a payload
/// up to six times (\u00XX).
inline constexpr size_t max_spec_file_bytes = 4 * 1024 * 1024;
/// Deepest nesting of arrays and objects a spec file may have (it needs 4).
inline constexpr int max_spec_depth = 8;

/// "KIND" or "KIND:PAYLOAD" (split at the first ':'); the flags' timeout and
/// attempts apply.
parsed<workflow::step_spec> parse_step(std::string_view text, const submit_flags& flags,
                                       const workflow::record_limits& lim = {});

/// The job of STEP arguments and the flags.
parsed<workflow::job_spec> spec_from_args(const std::vector<std::string>& steps,
                                          const submit_flags& flags,
                                          const workflow::record_limits& lim = {});

/// The job of a spec file's text (see docs/jobs.md). Flags given override
/// the file's id and failure threshold, and give the steps that set no
/// timeout_ms or attempts theirs.
parsed<workflow::job_spec> spec_from_json(std::string_view text,
                                          const submit_flags& flags,
                                          const workflow::record_limits& lim = {});

/// Reads a spec file (at most max_spec_file_bytes) and parses it; the errors
/// name the file.
parsed<workflow::job_spec> spec_from_file(const std::string& path,
                                          const submit_flags& flags,
                                          const workflow::record_limits& lim = {});

/// The whole job against the record limits (sizes, steps, threshold,
/// retry policy): the line to print, or nothing if it is acceptable.
std::optional<std::string> check_limits(const workflow::job_spec& spec,
                                        const workflow::record_limits& lim = {});

/// The first kind (forward or compensation) that no node serves, as the line
/// to print; nothing if every kind is served.
std::optional<std::string> check_kinds(const workflow::job_spec& spec,
                                       const std::set<std::string>& served);

/// A state name ("pending", ..., "cancelled").
std::optional<workflow::step_state> parse_state(std::string_view text);

/// At most `max` bytes of `s` for a one-line message: control bytes escaped
/// (\n, \xNN), "..." when cut.
std::string shown(std::string_view s, size_t max = 60);

} // namespace conclave::cli::job
