// Where a job lives in the reliable collections store, and the writes that
// turn one version of a job view into the next — all of them in the one
// transaction that changes the job (DESIGN.md, "Workflows": the store is the
// source of truth; indexes are updated in the same transactions as records).
//
// Collections (dictionaries of bytes):
//   wf.jobs    job id                      -> job_record
//   wf.steps   step_key(job, step)         -> step_record
//   wf.events  event_key(job, seq)         -> job_event (all but "received",
//                                             which received_event() derives
//                                             from the job record: one row less
//                                             per pending job)
//   wf.due     due_key(CompleteBy, job, step) -> ""   running steps, by deadline
//   wf.ready   ready_key(claimable at, job)   -> step count (a read hint)
//                                                  jobs with a claimable step
//   wf.state   state_key(state, job)          -> ""   jobs by state (list)
//   wf.meta    "term"                      -> the highest supervisor term
// A scheduler finds work by enumerating wf.ready up to now, a supervisor finds
// expired steps by enumerating wf.due up to now: neither scans every job.
#pragma once

#include "protocols/workflow/lifecycle.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conclave::workflow::layout {

inline constexpr const char* jobs = "wf.jobs";
inline constexpr const char* steps = "wf.steps";
inline constexpr const char* events = "wf.events";
inline constexpr const char* due = "wf.due";
inline constexpr const char* ready = "wf.ready";
inline constexpr const char* state = "wf.state";
inline constexpr const char* meta = "wf.meta";
inline constexpr const char* term_key = "term";

/// Every collection, for hosts that create them at start.
inline const std::vector<std::string>& all() {
  static const std::vector<std::string> names{jobs,  steps, events, due,
                                              ready, state, meta};
  return names;
}

/// One change to the store: put `value` at `key`, or remove `key`.
struct write {
  std::string collection;
  std::string key;
  bool remove = false;
  std::string value;
};

/// When the job's claimable step may be claimed (its not_before), if it has
/// one in its current phase.
std::optional<timestamp> ready_at(const job_view& v);

std::string ready_key(timestamp at, const job_id& j);
/// The job id in a ready key; corrupt_record for garbage.
result<job_id> decode_ready_key(std::string_view key);
/// The value of a ready entry: the job's step count, a hint for how many
/// step rows to read with the job row ("" or garbage: 0, no hint).
std::string ready_value(const job_view& v);
uint32_t ready_step_hint(std::string_view value);
/// Upper bound of ready keys claimable at `now`.
std::string ready_bound(timestamp now);

std::string state_key(job_state s, const job_id& j);
/// [from, to) of the state keys of `s`.
std::pair<std::string, std::string> state_range(job_state s);
result<job_id> decode_state_key(std::string_view key);

/// A job's "received" event (always seq 1), derived from its record.
job_event received_event(const job_record& j);

/// The bytes of a job's rows as the store holds them (the job record, then
/// each step record), when the caller has them at hand: job_writes then
/// compares the new encodings with these instead of encoding `before` again.
struct stored_rows {
  std::string job;
  std::vector<std::string> steps;
};

/// The writes from `before` (none: a new job) to `after`, plus the events
/// (a new job's "received" event is not stored: see received_event()).
/// Unchanged records are not rewritten. `stored`, if given, holds the bytes
/// of `before`'s rows (stored_rows); a row it lacks is encoded from `before`.
std::vector<write> job_writes(const job_view* before, const job_view& after,
                              const effects& e, const stored_rows* stored = nullptr);

/// job_writes() for an optional `before` (no stored bytes).
std::vector<write> job_writes(const std::optional<job_view>& before,
                              const job_view& after, const effects& e);

} // namespace conclave::workflow::layout
