// Where a job lives in the reliable collections store, and the writes that
// turn one version of a job view into the next — all of them in the one
// transaction that changes the job (docs/concepts/workflows.md, "The store is
// the source of truth": indexes are updated in the same transactions as
// records).
//
// Collections (dictionaries of bytes):
//   wf.jobs    job id                      -> the job's document (encode_doc:
//                                             job record, every step record,
//                                             its newest events; ONE row per job)
//   wf.events  event_key(job, seq)         -> job_event: the events that no
//                                             longer fit in the document (it
//                                             keeps job_doc_events = 32); never
//                                             "received", which received_event()
//                                             derives from the job record
//   wf.due     due_key(CompleteBy, job, step) -> ""   running steps, by deadline
//   wf.ready   ready_key(claimable at, job)   -> ready_value(kind): jobs with a
//                                             claimable step, and the agent
//                                             kind that step needs, so that a
//                                             scheduler skips what no local
//                                             agent serves without reading
//                                             the document
//   wf.state   state_key(state, job)          -> ""   jobs by state class (list):
//                                             one class per final state, one
//                                             ("active") for pending, processing
//                                             and compensating, so a job's
//                                             first claim writes no index row
//   wf.meta    "term"                      -> the highest supervisor term
//   wf.agents  node id (decimal)           -> the agent kinds that node serves
//                                             (encode_kinds), written by each
//                                             node at start (nodes of a cluster)
// A scheduler finds work by enumerating wf.ready up to now, a supervisor finds
// expired steps by enumerating wf.due up to now: neither scans every job.
//
// A job change reads, locks and checks one row (the document) and writes it
// once, plus the index rows that changed and, when the document would hold
// more than job_doc_events events, one wf.events row per event moved out
// (the oldest). A job's events are the wf.events rows followed by the
// document's events: consecutive seqs, each in exactly one place.
// The document's size is bounded by record_limits (max_spec_bytes).
#pragma once

#include "protocols/workflow/lifecycle.hpp"

#include <array>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::workflow::layout {

inline constexpr const char* jobs = "wf.jobs";
inline constexpr const char* events = "wf.events";
inline constexpr const char* due = "wf.due";
inline constexpr const char* ready = "wf.ready";
inline constexpr const char* state = "wf.state";
inline constexpr const char* meta = "wf.meta";
inline constexpr const char* term_key = "term";
inline constexpr const char* agents = "wf.agents";

/// Every collection, for hosts that create them at start. A constant, not a
/// function-local static: simulated worlds on several threads start job
/// stores at once, and race checkers (helgrind) cannot see the guard of a
/// static's first use.
inline constexpr std::array<const char*, 6> all_names{jobs,  events, due,
                                                      ready, state,  meta};
inline const std::array<const char*, 6>& all() {
  return all_names;
}

/// A node's agent kinds as stored in wf.agents: sorted, one per line.
std::string encode_kinds(const std::set<std::string>& kinds);
/// The kinds of a wf.agents row (empty lines skipped).
std::set<std::string> decode_kinds(std::string_view row);

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
/// The value of a ready row: a tag byte (1) and the agent kind of the
/// job's claimable step (its compensation's kind while compensating).
std::string ready_value(const job_view& v);
/// The kind a ready row's value names; nothing for a value without the tag
/// (rows written before the kind was stored hold "": read the document).
std::optional<std::string_view> ready_kind(std::string_view value);
/// The job id in a ready key; corrupt_record for garbage.
result<job_id> decode_ready_key(std::string_view key);
/// Upper bound of ready keys claimable at `now`.
std::string ready_bound(timestamp now);

/// The index class of a state: the state itself if final, else "active"
/// (pending, processing and compensating share one class: a job moves between
/// them on every claim and outcome, and an index row per move cost two writes
/// per job; `list` of such a state reads the class's documents instead).
uint8_t state_class(job_state s);
/// True if the class of `s` holds only jobs in state `s`.
bool class_is_exact(job_state s);

std::string state_key(job_state s, const job_id& j);
/// [from, to) of the state keys of the class of `s`.
std::pair<std::string, std::string> state_range(job_state s);
result<job_id> decode_state_key(std::string_view key);

/// A job's "received" event (always seq 1), derived from its record.
job_event received_event(const job_record& j);

/// The writes from `before` (none: a new job) to `after`, plus the events
/// of `e` (a new job's "received" event is not stored: see received_event()).
/// Appends e's events to after.events, the document's events; if more than
/// job_doc_events are there then, the oldest move out to wf.events rows
/// (after.events keeps the newest job_doc_events). Call it once per change.
/// The document is rewritten only if its bytes change: `stored`, if given,
/// holds the bytes the store has for `before` (what a caller read or checks),
/// else encode_doc(*before) is compared.
std::vector<write> job_writes(const job_view* before, job_view& after, const effects& e,
                              const std::string* stored = nullptr);

/// job_writes() for an optional `before` (no stored bytes).
std::vector<write> job_writes(const std::optional<job_view>& before, job_view& after,
                              const effects& e);

/// A job's events from `from` on, given the wf.events rows read from
/// event_key(id, from) on (decoded, in key order) and its document's events
/// (`doc`, oldest first): in seq order, each once. The "received" event is
/// not added (the caller derives it).
std::vector<job_event> merge_events(std::vector<job_event> rows,
                                    const std::vector<job_event>& doc, uint64_t from);

} // namespace conclave::workflow::layout
