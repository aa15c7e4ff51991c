// The records of a workflow job as the store keeps them (docs/patterns.md,
// "Scheduler Agent Supervisor": the state store) and their byte encoding.
//
// One job record (state, current step, failure threshold, counters) and one
// record per step (state, LockedBy, CompleteBy, FailureCount, attempt, last
// error, timestamps) — the pattern's ProcessState record, per step. Events
// (received, step started, ..., compensated) are numbered per job.
//
// The store keeps a job as ONE document (encode_doc): the job record, every
// step record and the job's newest events (at most job_doc_events), so a job
// change reads, checks and writes one row. The job id is stored once: step
// and event bodies in a document omit it (and the step index, which is the
// position). Older events are event records of their own (encode(job_event)).
//
// Encoding: u8 record tag, u8 version, then the fields. Events and terms
// (version 1) use the store's byte codec (little endian, u32-length-prefixed
// bytes). Documents are version 2, compact: every replica keeps one per job
// in memory and in its log, so integers are LEB128 varints (zigzag when
// signed), bytes have a varint length, the step and event times are offsets
// from the job's creation, and a flag byte per step says which of the
// usually absent fields follow (a non-default retry policy, compensation,
// lock, agent, deadline, not-before time, last error). A pending 1-step job
// takes about 40 bytes plus its id, kind and payload (version 1: about 210).
// Version 1 documents, written before, still decode (a store keeps them until
// the job changes next); an unknown version is unsupported_version. Every
// size is bounded by record_limits and every enum range-checked, so decode()
// turns any garbage into errc::corrupt_record (or unsupported_version)
// instead of crashing or allocating without bound; a decoded record satisfies
// the same invariants as a submitted one (timeouts > 0, valid retry policy),
// and a decoded version 2 document re-encodes to the same bytes (the decoder
// refuses overlong varints and flags that disagree with their fields).
//
// The CompleteBy index: keys "u64 big-endian CompleteBy | job id | u32 step"
// sort by deadline in the store's byte order, so the supervisor finds due
// steps by enumerating a prefix of the index instead of scanning every job.
#pragma once

#include "protocols/workflow/errc.hpp"
#include "protocols/workflow/retry_policy.hpp"
#include "protocols/workflow/types.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conclave::workflow {

// -- what a user submits --------------------------------------------------------

/// The compensating action of a step: undoes a completed step's effect.
struct compensation_spec {
  std::string agent_kind;
  std::string payload;

  friend bool operator==(const compensation_spec& a, const compensation_spec& b) {
    return a.agent_kind == b.agent_kind && a.payload == b.payload;
  }
};

struct step_spec {
  /// Which agent runs the step ("payment", "shipping").
  std::string agent_kind;
  /// Opaque bytes for the service (a CAF-serialized value, JSON, ...).
  std::string payload;
  /// CompleteBy = claim time + timeout. Must be > 0.
  duration timeout{std::chrono::seconds{5}};
  retry_policy retry;
  std::optional<compensation_spec> compensation;

  friend bool operator==(const step_spec& a, const step_spec& b) {
    return a.agent_kind == b.agent_kind && a.payload == b.payload
           && a.timeout == b.timeout && a.retry == b.retry
           && a.compensation == b.compensation;
  }
};

struct job_spec {
  /// Empty: the client generates one.
  job_id id;
  std::vector<step_spec> steps;
  /// Recoveries of one step (FailureCount) before it fails for good.
  uint32_t failure_threshold = 3;
  /// Wait before a recovered step may be claimed again.
  duration recovery_backoff{0};
};

/// Bounds of everything stored; decode enforces the same bounds.
struct record_limits {
  size_t max_id_bytes = 200;
  size_t max_kind_bytes = 100;
  size_t max_payload_bytes = 64 * 1024;
  size_t max_text_bytes = 2048;
  size_t max_steps = 64;
  size_t max_non_retryable = 16;
  uint32_t max_failure_threshold = 1000;
  /// Sum of spec_bytes() over a job's steps. Bounds the job's document: with
  /// max_steps steps (ids, last errors) and job_doc_events events of
  /// max_text_bytes, a document stays below 800 KiB, under the store's 1 MiB
  /// value limit (records.test.cpp builds the worst case).
  size_t max_spec_bytes = 512 * 1024;
};

/// Events a job's document keeps (the newest); older ones are rows of their
/// own (store_layout.hpp).
inline constexpr size_t job_doc_events = 32;

/// The variable-length bytes of a step's spec (kinds, payloads, non-retryable
/// error kinds): what record_limits::max_spec_bytes bounds per job.
size_t spec_bytes(const step_spec& s);

/// Checks a submission: empty_job, too_large, zero_timeout, bad_argument
/// (an id with a NUL byte, bad retry policy, threshold 0). An empty id is
/// accepted here: the client generates one. `known_kind` says
/// whether an agent kind is served; unknown_agent_kind otherwise.
template <class KnownKind>
result<void> validate(const job_spec& spec, const record_limits& lim,
                      KnownKind&& known_kind);

// -- what is stored ----------------------------------------------------------------

struct step_record {
  job_id job;
  step_index index;
  step_spec spec;
  step_state state = step_state::pending;
  /// The scheduler holding the step (empty when free).
  scheduler_ref locked_by;
  /// The agent the running attempt was sent to (0 when free): the supervisor
  /// recovers its steps when it dies.
  uint64_t agent = 0;
  /// Deadline of the running attempt (none when free).
  std::optional<timestamp> complete_by;
  /// Recoveries so far (forward action).
  uint32_t failure_count = 0;
  /// Recoveries of the compensating action.
  uint32_t compensation_failures = 0;
  /// Dispatches so far: the fencing token.
  workflow::attempt attempt;
  /// "kind: message" of the last failure; empty if none.
  std::string last_error;
  timestamp created{0};
  timestamp updated{0};
  /// A recovered step may not be claimed before this time.
  timestamp not_before{0};
  /// Order of completion within the job (1, 2, ...; 0: not completed).
  uint64_t completed_seq = 0;
};

struct job_record {
  job_id id;
  job_state state = job_state::pending;
  uint32_t step_count = 0;
  /// The step the job is at (forward phase); step_count when all are done.
  step_index current;
  uint32_t failure_threshold = 3;
  duration recovery_backoff{0};
  timestamp created{0};
  timestamp updated{0};
  /// Completions so far (source of step_record::completed_seq).
  uint64_t completions = 0;
  /// Sequence number of the next event.
  uint64_t next_event = 1;
  /// Why the job failed or was cancelled; empty otherwise.
  std::string last_error;
};

enum class event_kind : uint8_t {
  received = 0,
  step_started = 1,
  step_completed = 2,
  retrying = 3,
  completed = 4,
  failed = 5,
  compensating = 6,
  compensated = 7,
  cancelled = 8,
  step_failed = 9,
  compensation_failed = 10,
  resubmitted = 11,
};
constexpr uint8_t event_kind_count = 12;

const char* to_string(event_kind k) noexcept;

struct job_event {
  job_id job;
  uint64_t seq = 0;
  event_kind kind = event_kind::received;
  /// The step concerned (job-level events: the current one).
  step_index step;
  workflow::attempt attempt;
  timestamp at{0};
  /// Free text (error, recovery cause); operator events say what to do.
  std::string detail;
};

/// A job with its steps: the unit the lifecycle core works on.
struct job_view {
  job_record job;
  std::vector<step_record> steps;
  /// The newest events as the job's document holds them (oldest first, at
  /// most job_doc_events, consecutive seqs; never "received"). Kept by the
  /// job store so that a view it returns re-encodes to the stored document;
  /// the lifecycle functions ignore them. Empty in views read for clients.
  std::vector<job_event> events;
};

// -- encoding ------------------------------------------------------------------------

/// Version of event and term records.
constexpr uint8_t record_version = 1;
/// Version of the documents encode_doc() writes (decode_doc() also reads 1).
constexpr uint8_t doc_version = 2;

std::string encode(const job_event& e);
std::string encode_term(const term& t);
/// A job's document: job record, step records, v.events (doc_version).
std::string encode_doc(const job_view& v);
/// The same document in version 1, the format before compact documents:
/// for tests that show such stores stay readable, and for the memory
/// benchmark's side-by-side figures. Nothing writes it to a store.
std::string encode_doc_v1(const job_view& v);

result<job_event> decode_event(std::string_view bytes, const record_limits& lim = {});
result<term> decode_term(std::string_view bytes);
/// corrupt_record for garbage: sizes bounded by `lim`, at most
/// job_doc_events events with increasing seqs below job.next_event, the
/// steps' spec bytes within max_spec_bytes.
result<job_view> decode_doc(std::string_view bytes, const record_limits& lim = {});

/// Store key of an event: "job id | u64 big-endian seq".
std::string event_key(const job_id& j, uint64_t seq);
/// [from, to) covering every key that starts with "job id |".
std::pair<std::string, std::string> job_key_range(const job_id& j);

/// CompleteBy index key; orders by deadline, then job, then step.
std::string due_key(timestamp complete_by, const job_id& j, step_index s);
/// Smallest key of a deadline after `t` (enumerate [begin, due_bound(now)) for
/// every step due at or before now).
std::string due_bound(timestamp t);
struct due_entry {
  timestamp complete_by{0};
  job_id job;
  step_index step;
};
result<due_entry> decode_due_key(std::string_view key, const record_limits& lim = {});

// -- template definitions ------------------------------------------------------------

template <class KnownKind>
result<void> validate(const job_spec& spec, const record_limits& lim,
                      KnownKind&& known_kind) {
  if (spec.steps.empty())
    return errc::empty_job;
  if (spec.steps.size() > lim.max_steps || spec.id.value.size() > lim.max_id_bytes)
    return errc::too_large;
  if (spec.id.value.find('\0') != std::string::npos)
    return errc::bad_argument; // '\0' separates the id from the rest of a key
  if (spec.failure_threshold == 0 || spec.failure_threshold > lim.max_failure_threshold
      || spec.recovery_backoff < duration::zero())
    return errc::bad_argument;
  size_t total = 0;
  for (auto& s : spec.steps)
    total += spec_bytes(s);
  if (total > lim.max_spec_bytes)
    return errc::too_large; // the job's document would not fit
  for (auto& s : spec.steps) {
    if (s.agent_kind.empty() || s.agent_kind.size() > lim.max_kind_bytes)
      return errc::bad_argument;
    if (s.payload.size() > lim.max_payload_bytes)
      return errc::too_large;
    if (s.timeout <= duration::zero())
      return errc::zero_timeout;
    if (auto r = validate(s.retry); !r)
      return r.error();
    if (s.retry.non_retryable.size() > lim.max_non_retryable)
      return errc::too_large;
    for (auto& k : s.retry.non_retryable)
      if (k.size() > lim.max_kind_bytes)
        return errc::too_large;
    if (!known_kind(s.agent_kind))
      return errc::unknown_agent_kind;
    if (s.compensation) {
      if (s.compensation->agent_kind.empty()
          || s.compensation->agent_kind.size() > lim.max_kind_bytes)
        return errc::bad_argument;
      if (s.compensation->payload.size() > lim.max_payload_bytes)
        return errc::too_large;
      if (!known_kind(s.compensation->agent_kind))
        return errc::unknown_agent_kind;
    }
  }
  return outcome::success();
}

} // namespace conclave::workflow
