// What `conclave job` prints: human tables by default, JSON with --json
// (docs/jobs.md lists the fields). Pure: views, events and reports in,
// text out.
//
// Payloads, errors and ids are bytes as far as the store is concerned: a
// table shows control bytes escaped and long values cut, and JSON replaces
// bytes that are not UTF-8 (U+FFFD), so printing never fails on what a job
// holds.
//
// Times: a cluster's workflow records carry wall-clock time (nanoseconds
// since the Unix epoch: the nodes' clock_offset). Human output shows them
// relative to `now`, the caller's reading of the same clock; JSON gives the
// raw nanoseconds next to the relative milliseconds.
#pragma once

#include "protocols/workflow/explain.hpp"
#include "protocols/workflow/records.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace conclave::cli::job {

/// One row of `job list`.
struct list_row {
  workflow::job_id id;
  workflow::job_state state = workflow::job_state::pending;
};

nlohmann::json to_json(const workflow::job_view& v, workflow::timestamp now);
nlohmann::json to_json(const workflow::job_event& e);
nlohmann::json to_json(const workflow::stuck_report& r, workflow::timestamp now);
nlohmann::json list_json(const std::vector<list_row>& rows, bool truncated);

/// The job line and one row per step.
std::string job_table(const workflow::job_view& v, workflow::timestamp now);
/// ID and STATE columns; an empty list prints the header only.
std::string list_table(const std::vector<list_row>& rows);
/// "seq 3 step_completed step 0 attempt 1: detail"
std::string event_line(const workflow::job_event& e);
/// explain.hpp's line, with control bytes escaped so that it stays one line.
std::string report_line(const workflow::stuck_report& r, workflow::timestamp now);

/// j.dump() that never throws: invalid UTF-8 becomes U+FFFD.
std::string dump(const nlohmann::json& j);

/// Columns padded to the widest cell, two spaces apart, the last one not
/// padded; every cell shown one-line (control bytes escaped).
std::string render_table(const std::vector<std::vector<std::string>>& rows);

} // namespace conclave::cli::job
