#include "protocols/workflow/store_layout.hpp"

#include <algorithm>
#include <limits>

namespace conclave::workflow::layout {

namespace {

void put_be64(std::string& out, uint64_t x) {
  for (int i = 7; i >= 0; --i)
    out.push_back(static_cast<char>((x >> (8 * i)) & 0xFF));
}

uint64_t order_preserving(timestamp t) {
  return static_cast<uint64_t>(t.count()) ^ (uint64_t{1} << 63);
}

/// Index keys of one kind for one job version: a few at most (one per
/// running step), so a vector, not a set (job_writes runs on every change).
using key_list = std::vector<std::string>;

key_list due_keys(const job_view& v) {
  key_list out;
  for (auto& s : v.steps)
    if (!s.locked_by.empty() && s.complete_by)
      out.push_back(due_key(*s.complete_by, v.job.id, s.index));
  return out;
}

/// The job's ready row (key and value), if it has a claimable step.
std::optional<std::pair<std::string, std::string>> ready_of(const job_view& v) {
  if (auto at = ready_at(v))
    return std::make_pair(ready_key(*at, v.job.id), ready_value(v));
  return std::nullopt;
}

constexpr char ready_value_tag = '\x01';

bool contains(const key_list& ks, const std::string& k) {
  return std::find(ks.begin(), ks.end(), k) != ks.end();
}

/// Index keys of one kind: removes what went, adds what came.
void diff_keys(const char* collection, const key_list& old_keys, const key_list& new_keys,
               std::vector<write>& out, const std::string& value = {}) {
  for (auto& k : old_keys)
    if (!contains(new_keys, k))
      out.push_back(write{collection, k, true, {}});
  for (auto& k : new_keys)
    if (!contains(old_keys, k))
      out.push_back(write{collection, k, false, value});
}

key_list as_list(std::optional<std::string> k) {
  key_list out;
  if (k)
    out.push_back(std::move(*k));
  return out;
}

} // namespace

std::optional<timestamp> ready_at(const job_view& v) {
  auto i = claimable_step(v, timestamp{std::numeric_limits<timestamp::rep>::max()});
  if (!i)
    return std::nullopt;
  return v.steps[i->value].not_before;
}

std::string ready_key(timestamp at, const job_id& j) {
  std::string k;
  put_be64(k, order_preserving(at));
  return k + j.value;
}

std::string ready_value(const job_view& v) {
  std::string out(1, ready_value_tag);
  auto i = claimable_step(v, timestamp{std::numeric_limits<timestamp::rep>::max()});
  if (!i)
    return out;
  auto& s = v.steps[i->value];
  out += s.state == step_state::compensating && s.spec.compensation
             ? s.spec.compensation->agent_kind
             : s.spec.agent_kind;
  return out;
}

std::optional<std::string_view> ready_kind(std::string_view value) {
  if (value.size() < 2 || value.front() != ready_value_tag)
    return std::nullopt;
  return value.substr(1);
}

result<job_id> decode_ready_key(std::string_view key) {
  if (key.size() <= 8)
    return errc::corrupt_record;
  return job_id{std::string{key.substr(8)}};
}

std::string ready_bound(timestamp now) {
  std::string k;
  put_be64(k, order_preserving(now + timestamp{1}));
  return k;
}

uint8_t state_class(job_state s) {
  // The final states keep their own numbers; the active class is 0 (pending's
  // number), which no final state has.
  return is_final(s) ? static_cast<uint8_t>(s) : uint8_t{0};
}

bool class_is_exact(job_state s) {
  return is_final(s);
}

std::string state_key(job_state s, const job_id& j) {
  std::string k;
  k.reserve(1 + j.value.size());
  k.push_back(static_cast<char>(state_class(s)));
  k.append(j.value);
  return k;
}

std::pair<std::string, std::string> state_range(job_state s) {
  auto c = state_class(s);
  return {std::string(1, static_cast<char>(c)), std::string(1, static_cast<char>(c + 1))};
}

result<job_id> decode_state_key(std::string_view key) {
  if (key.size() < 2)
    return errc::corrupt_record;
  return job_id{std::string{key.substr(1)}};
}

job_event received_event(const job_record& j) {
  job_event e;
  e.job = j.id;
  e.seq = 1;
  e.kind = event_kind::received;
  e.at = j.created;
  return e;
}

std::vector<write> job_writes(const std::optional<job_view>& before, job_view& after,
                              const effects& e) {
  return job_writes(before ? &*before : nullptr, after, e);
}

std::vector<write> job_writes(const job_view* before, job_view& after, const effects& e,
                              const std::string* stored) {
  std::vector<write> out;
  for (auto& ev : e.events)
    if (before || ev.kind != event_kind::received)
      after.events.push_back(ev);
  if (after.events.size() > job_doc_events) {
    auto spill = after.events.size() - job_doc_events;
    for (size_t i = 0; i < spill; ++i)
      out.push_back(write{events, event_key(after.job.id, after.events[i].seq), false,
                          encode(after.events[i])});
    after.events.erase(after.events.begin(),
                       after.events.begin() + static_cast<std::ptrdiff_t>(spill));
  }
  auto doc = encode_doc(after);
  bool same = before && (stored ? *stored == doc : encode_doc(*before) == doc);
  if (!same)
    out.push_back(write{jobs, after.job.id.value, false, std::move(doc)});
  diff_keys(due, before ? due_keys(*before) : key_list{}, due_keys(after), out);
  // The ready row: its key moves with the claimable time, its value with
  // the claimable step's kind (a row whose key stays is rewritten when only
  // the kind changed).
  auto old_ready = before ? ready_of(*before) : std::nullopt;
  auto new_ready = ready_of(after);
  if (old_ready && (!new_ready || old_ready->first != new_ready->first))
    out.push_back(write{ready, old_ready->first, true, {}});
  if (new_ready && (!old_ready || *old_ready != *new_ready))
    out.push_back(write{ready, new_ready->first, false, std::move(new_ready->second)});
  diff_keys(state,
            as_list(before ? std::optional<std::string>{state_key(before->job.state,
                                                                  before->job.id)}
                           : std::nullopt),
            as_list(state_key(after.job.state, after.job.id)), out);
  return out;
}

std::vector<job_event> merge_events(std::vector<job_event> rows,
                                    const std::vector<job_event>& doc, uint64_t from) {
  // One snapshot holds each event in one place; a row at or after the
  // document's first event (none is written so) is dropped, not doubled.
  uint64_t last = 0;
  std::vector<job_event> out;
  out.reserve(rows.size() + doc.size());
  for (auto& ev : rows)
    if (ev.seq >= from && ev.seq > last && (doc.empty() || ev.seq < doc.front().seq)) {
      last = ev.seq;
      out.push_back(std::move(ev));
    }
  for (auto& ev : doc)
    if (ev.seq >= from && ev.seq > last) {
      last = ev.seq;
      out.push_back(ev);
    }
  return out;
}

std::string encode_kinds(const std::set<std::string>& kinds) {
  std::string out;
  for (auto& k : kinds) {
    if (!out.empty())
      out += '\n';
    out += k;
  }
  return out;
}

std::set<std::string> decode_kinds(std::string_view row) {
  std::set<std::string> out;
  while (!row.empty()) {
    auto nl = row.find('\n');
    auto line = row.substr(0, nl);
    if (!line.empty())
      out.emplace(line);
    if (nl == std::string_view::npos)
      break;
    row.remove_prefix(nl + 1);
  }
  return out;
}

} // namespace conclave::workflow::layout
