#include "protocols/workflow/records.hpp"

#include "protocols/store/byte_codec.hpp"

#include <cmath>
#include <cstring>

namespace conclave::workflow {

using store::byte_reader;
using store::byte_writer;

namespace {

// 1 and 2 were the step and job rows of the layout before documents.
enum class tag : uint8_t { event = 3, term = 4, doc = 5 };

void put_i64(byte_writer& w, int64_t x) {
  w.u64(static_cast<uint64_t>(x));
}

void put_double(byte_writer& w, double x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  w.u64(bits);
}

/// A byte_reader that also enforces bounds; any violation makes ok() false.
class checked_reader {
public:
  explicit checked_reader(std::string_view in) : r_(in) {}

  uint8_t u8() { return r_.u8(); }
  uint32_t u32() { return r_.u32(); }
  uint64_t u64() { return r_.u64(); }
  int64_t i64() { return static_cast<int64_t>(r_.u64()); }
  double f64() {
    auto bits = r_.u64();
    double x = 0;
    std::memcpy(&x, &bits, sizeof x);
    if (!std::isfinite(x))
      bad_ = true;
    return x;
  }
  bool flag() {
    auto x = r_.u8();
    if (x > 1)
      bad_ = true;
    return x == 1;
  }
  /// Bytes of at most `max` length (checked before copying).
  std::string bytes(size_t max) {
    auto s = r_.bytes();
    if (s.size() > max)
      bad_ = true;
    return s;
  }
  template <class Enum>
  Enum enumeration(uint8_t count) {
    auto x = r_.u8();
    if (x >= count)
      bad_ = true;
    return static_cast<Enum>(x);
  }
  void fail() { bad_ = true; }
  bool ok() const { return r_.ok() && !bad_; }
  bool at_end() const { return r_.at_end(); }

private:
  byte_reader r_;
  bool bad_ = false;
};

void header(byte_writer& w, tag t, uint8_t version = record_version) {
  w.u8(static_cast<uint8_t>(t));
  w.u8(version);
}

result<void> check_header(checked_reader& r, tag t) {
  auto got = r.u8();
  auto version = r.u8();
  if (!r.ok() || got != static_cast<uint8_t>(t))
    return errc::corrupt_record;
  if (version != record_version)
    return errc::unsupported_version;
  return outcome::success();
}

void put_policy(byte_writer& w, const retry_policy& p) {
  w.u32(p.max_attempts);
  put_i64(w, p.initial_interval.count());
  put_double(w, p.multiplier);
  put_i64(w, p.max_interval.count());
  put_double(w, p.jitter);
  w.u32(static_cast<uint32_t>(p.non_retryable.size()));
  for (auto& k : p.non_retryable)
    w.bytes(k);
}

retry_policy get_policy(checked_reader& r, const record_limits& lim) {
  retry_policy p;
  p.max_attempts = r.u32();
  p.initial_interval = duration{r.i64()};
  p.multiplier = r.f64();
  p.max_interval = duration{r.i64()};
  p.jitter = r.f64();
  auto n = r.u32();
  if (n > lim.max_non_retryable) {
    r.fail();
    return p;
  }
  for (uint32_t i = 0; i < n && r.ok(); ++i)
    p.non_retryable.push_back(r.bytes(lim.max_kind_bytes));
  if (r.ok() && !validate(p))
    r.fail();
  return p;
}

void put_spec(byte_writer& w, const step_spec& s) {
  w.bytes(s.agent_kind);
  w.bytes(s.payload);
  put_i64(w, s.timeout.count());
  put_policy(w, s.retry);
  w.u8(s.compensation ? 1 : 0);
  if (s.compensation) {
    w.bytes(s.compensation->agent_kind);
    w.bytes(s.compensation->payload);
  }
}

step_spec get_spec(checked_reader& r, const record_limits& lim) {
  step_spec s;
  s.agent_kind = r.bytes(lim.max_kind_bytes);
  s.payload = r.bytes(lim.max_payload_bytes);
  s.timeout = duration{r.i64()};
  if (s.timeout <= duration::zero() || s.agent_kind.empty())
    r.fail();
  s.retry = get_policy(r, lim);
  if (r.flag()) {
    compensation_spec c;
    c.agent_kind = r.bytes(lim.max_kind_bytes);
    c.payload = r.bytes(lim.max_payload_bytes);
    if (c.agent_kind.empty())
      r.fail();
    s.compensation = std::move(c);
  }
  return s;
}

template <class T>
result<T> finish(checked_reader& r, T&& x) {
  if (!r.ok() || !r.at_end())
    return errc::corrupt_record;
  return std::move(x);
}

void put_be(std::string& out, uint64_t x, int n) {
  for (int i = n - 1; i >= 0; --i)
    out.push_back(static_cast<char>((x >> (8 * i)) & 0xFF));
}

uint64_t get_be(std::string_view in, size_t pos, int n) {
  uint64_t x = 0;
  for (int i = 0; i < n; ++i)
    x = (x << 8) | static_cast<unsigned char>(in[pos + i]);
  return x;
}

/// Deadlines are non-negative offsets; the sign bit is flipped so that the
/// big-endian bytes sort like the signed value anyway.
uint64_t order_preserving(timestamp t) {
  return static_cast<uint64_t>(t.count()) ^ (uint64_t{1} << 63);
}

} // namespace

const char* to_string(event_kind k) noexcept {
  switch (k) {
  case event_kind::received:
    return "received";
  case event_kind::step_started:
    return "step_started";
  case event_kind::step_completed:
    return "step_completed";
  case event_kind::retrying:
    return "retrying";
  case event_kind::completed:
    return "completed";
  case event_kind::failed:
    return "failed";
  case event_kind::compensating:
    return "compensating";
  case event_kind::compensated:
    return "compensated";
  case event_kind::cancelled:
    return "cancelled";
  case event_kind::step_failed:
    return "step_failed";
  case event_kind::compensation_failed:
    return "compensation_failed";
  case event_kind::resubmitted:
    return "resubmitted";
  }
  return "unknown";
}

// -- step ------------------------------------------------------------------------------

namespace {

size_t step_size(const step_record& s) {
  return 160 + s.spec.agent_kind.size() + s.spec.payload.size() + s.last_error.size()
         + (s.spec.compensation ? s.spec.compensation->agent_kind.size()
                                      + s.spec.compensation->payload.size()
                                : 0);
}

/// Everything of a step but its job id and index.
void put_step_body(byte_writer& w, const step_record& s) {
  put_spec(w, s.spec);
  w.u8(static_cast<uint8_t>(s.state));
  w.u64(s.locked_by.instance);
  w.u64(s.locked_by.incarnation);
  w.u64(s.agent);
  w.u8(s.complete_by ? 1 : 0);
  put_i64(w, s.complete_by ? s.complete_by->count() : 0);
  w.u32(s.failure_count);
  w.u32(s.compensation_failures);
  w.u32(s.attempt.value);
  w.bytes(s.last_error);
  put_i64(w, s.created.count());
  put_i64(w, s.updated.count());
  put_i64(w, s.not_before.count());
  w.u64(s.completed_seq);
}

void get_step_body(checked_reader& r, step_record& s, const record_limits& lim) {
  s.spec = get_spec(r, lim);
  s.state = r.enumeration<step_state>(step_state_count);
  s.locked_by.instance = r.u64();
  s.locked_by.incarnation = r.u64();
  s.agent = r.u64();
  auto has_deadline = r.flag();
  auto deadline = timestamp{r.i64()};
  if (has_deadline)
    s.complete_by = deadline;
  else if (deadline.count() != 0)
    r.fail(); // one encoding per record: no hidden bytes
  s.failure_count = r.u32();
  s.compensation_failures = r.u32();
  s.attempt.value = r.u32();
  s.last_error = r.bytes(lim.max_text_bytes);
  s.created = timestamp{r.i64()};
  s.updated = timestamp{r.i64()};
  s.not_before = timestamp{r.i64()};
  s.completed_seq = r.u64();
}

/// Everything of a job record.
void put_job_body(byte_writer& w, const job_record& j) {
  w.bytes(j.id.value);
  w.u8(static_cast<uint8_t>(j.state));
  w.u32(j.step_count);
  w.u32(j.current.value);
  w.u32(j.failure_threshold);
  put_i64(w, j.recovery_backoff.count());
  put_i64(w, j.created.count());
  put_i64(w, j.updated.count());
  w.u64(j.completions);
  w.u64(j.next_event);
  w.bytes(j.last_error);
}

void get_job_body(checked_reader& r, job_record& j, const record_limits& lim) {
  j.id.value = r.bytes(lim.max_id_bytes);
  j.state = r.enumeration<job_state>(step_state_count);
  j.step_count = r.u32();
  j.current.value = r.u32();
  j.failure_threshold = r.u32();
  j.recovery_backoff = duration{r.i64()};
  j.created = timestamp{r.i64()};
  j.updated = timestamp{r.i64()};
  j.completions = r.u64();
  j.next_event = r.u64();
  j.last_error = r.bytes(lim.max_text_bytes);
  if (j.id.value.empty() || j.step_count == 0 || j.step_count > lim.max_steps
      || j.current.value > j.step_count || j.failure_threshold == 0
      || j.failure_threshold > lim.max_failure_threshold
      || j.recovery_backoff < duration::zero())
    r.fail();
}

/// Everything of an event but its job id.
void put_event_body(byte_writer& w, const job_event& e) {
  w.u64(e.seq);
  w.u8(static_cast<uint8_t>(e.kind));
  w.u32(e.step.value);
  w.u32(e.attempt.value);
  put_i64(w, e.at.count());
  w.bytes(e.detail);
}

void get_event_body(checked_reader& r, job_event& e, const record_limits& lim) {
  e.seq = r.u64();
  e.kind = r.enumeration<event_kind>(event_kind_count);
  e.step.value = r.u32();
  e.attempt.value = r.u32();
  e.at = timestamp{r.i64()};
  e.detail = r.bytes(lim.max_text_bytes);
}

} // namespace

size_t spec_bytes(const step_spec& s) {
  size_t n = s.agent_kind.size() + s.payload.size();
  for (auto& k : s.retry.non_retryable)
    n += k.size();
  if (s.compensation)
    n += s.compensation->agent_kind.size() + s.compensation->payload.size();
  return n;
}

// -- event -----------------------------------------------------------------------------

std::string encode(const job_event& e) {
  std::string out;
  out.reserve(48 + e.job.value.size() + e.detail.size());
  byte_writer w{out};
  header(w, tag::event);
  w.bytes(e.job.value);
  put_event_body(w, e);
  return out;
}

result<job_event> decode_event(std::string_view bytes, const record_limits& lim) {
  checked_reader r{bytes};
  if (auto h = check_header(r, tag::event); !h)
    return h.error();
  job_event e;
  e.job.value = r.bytes(lim.max_id_bytes);
  get_event_body(r, e, lim);
  if (e.job.value.empty())
    r.fail();
  return finish(r, std::move(e));
}

// -- document, version 2 (compact) -------------------------------------------------

namespace {

/// Writes the compact document format: unsigned LEB128 varints, zigzag for
/// signed values, varint-length bytes, times as offsets from the job's
/// creation, and a flag byte per step for the fields that are usually
/// absent (so a pending job's step costs a few bytes beyond its kind).
class compact_writer {
public:
  explicit compact_writer(std::string& out) : out_(out) {}

  void u8(uint8_t x) { out_.push_back(static_cast<char>(x)); }
  void var(uint64_t x) {
    char buf[10];
    size_t n = 0;
    while (x >= 0x80) {
      buf[n++] = static_cast<char>((x & 0x7F) | 0x80);
      x >>= 7;
    }
    buf[n++] = static_cast<char>(x);
    out_.append(buf, n);
  }
  void svar(int64_t x) {
    auto u = static_cast<uint64_t>(x);
    var((u << 1) ^ (x < 0 ? ~uint64_t{0} : uint64_t{0}));
  }
  /// `t` as an offset from `base` (wrapping: every value round-trips).
  void time(timestamp t, timestamp base) {
    svar(static_cast<int64_t>(static_cast<uint64_t>(t.count())
                              - static_cast<uint64_t>(base.count())));
  }
  void f64(double x) {
    uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    char buf[8];
    for (int i = 0; i < 8; ++i)
      buf[i] = static_cast<char>((bits >> (8 * i)) & 0xFF);
    out_.append(buf, 8);
  }
  void bytes(std::string_view x) {
    var(x.size());
    out_.append(x.data(), x.size());
  }

private:
  std::string& out_;
};

/// Reads what compact_writer wrote. Refuses anything the writer would not
/// have produced (overlong varints, values past their type), so a decoded
/// document re-encodes to the same bytes; any violation makes ok() false.
class compact_reader {
public:
  explicit compact_reader(std::string_view in) : in_(in) {}

  uint8_t u8() {
    if (!ok_ || pos_ >= in_.size())
      return fail(), 0;
    return static_cast<uint8_t>(in_[pos_++]);
  }
  uint64_t var() {
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      auto b = u8();
      if (!ok_)
        return 0;
      if (shift == 63 && b > 1)
        return fail(), 0; // past 64 bits
      x |= uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) {
        if (b == 0 && shift != 0)
          return fail(), 0; // overlong: a shorter encoding exists
        return x;
      }
    }
    return fail(), 0;
  }
  uint32_t var32() {
    auto x = var();
    if (x > UINT32_MAX)
      return fail(), 0;
    return static_cast<uint32_t>(x);
  }
  int64_t svar() {
    auto u = var();
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  timestamp time(timestamp base) {
    auto d = static_cast<uint64_t>(svar());
    return timestamp{static_cast<int64_t>(static_cast<uint64_t>(base.count()) + d)};
  }
  double f64() {
    if (!ok_ || in_.size() - pos_ < 8)
      return fail(), 0.0;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits |= uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    double x = 0;
    std::memcpy(&x, &bits, sizeof x);
    if (!std::isfinite(x))
      fail();
    return x;
  }
  /// Bytes of at most `max` length (checked before copying).
  std::string bytes(size_t max) {
    auto n = var();
    if (!ok_ || n > max || n > in_.size() - pos_)
      return fail(), std::string{};
    std::string s{in_.substr(pos_, n)};
    pos_ += n;
    return s;
  }
  template <class Enum>
  Enum enumeration(uint8_t count) {
    auto x = u8();
    if (x >= count)
      fail();
    return static_cast<Enum>(x);
  }
  void fail() { ok_ = false; }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Flags of a step in the compact format: which optional fields follow.
enum step_flag : uint8_t {
  has_compensation = 1 << 0,
  custom_policy = 1 << 1, ///< else the default retry_policy
  has_deadline = 1 << 2,  ///< complete_by
  has_not_before = 1 << 3,
  has_last_error = 1 << 4,
  is_locked = 1 << 5, ///< locked_by not empty
  has_agent = 1 << 6,
  all_step_flags = (1 << 7) - 1,
};

void put_policy(compact_writer& w, const retry_policy& p) {
  w.var(p.max_attempts);
  w.svar(p.initial_interval.count());
  w.f64(p.multiplier);
  w.svar(p.max_interval.count());
  w.f64(p.jitter);
  w.var(p.non_retryable.size());
  for (auto& k : p.non_retryable)
    w.bytes(k);
}

retry_policy get_policy(compact_reader& r, const record_limits& lim) {
  retry_policy p;
  p.max_attempts = r.var32();
  p.initial_interval = duration{r.svar()};
  p.multiplier = r.f64();
  p.max_interval = duration{r.svar()};
  p.jitter = r.f64();
  auto n = r.var();
  if (n > lim.max_non_retryable) {
    r.fail();
    return p;
  }
  for (uint64_t i = 0; i < n && r.ok(); ++i)
    p.non_retryable.push_back(r.bytes(lim.max_kind_bytes));
  if (r.ok() && (!validate(p) || p == retry_policy{}))
    r.fail(); // invalid, or the default (which the flag says)
  return p;
}

void put_step_v2(compact_writer& w, const step_record& s, timestamp base) {
  uint8_t flags = 0;
  if (s.spec.compensation)
    flags |= has_compensation;
  bool custom = !(s.spec.retry == retry_policy{});
  if (custom)
    flags |= custom_policy;
  if (s.complete_by)
    flags |= has_deadline;
  if (s.not_before.count() != 0)
    flags |= has_not_before;
  if (!s.last_error.empty())
    flags |= has_last_error;
  if (!(s.locked_by == scheduler_ref{}))
    flags |= is_locked;
  if (s.agent != 0)
    flags |= has_agent;
  w.bytes(s.spec.agent_kind);
  w.bytes(s.spec.payload);
  w.svar(s.spec.timeout.count());
  w.u8(flags);
  if (custom)
    put_policy(w, s.spec.retry);
  if (s.spec.compensation) {
    w.bytes(s.spec.compensation->agent_kind);
    w.bytes(s.spec.compensation->payload);
  }
  w.u8(static_cast<uint8_t>(s.state));
  if (flags & is_locked) {
    w.var(s.locked_by.instance);
    w.var(s.locked_by.incarnation);
  }
  if (flags & has_agent)
    w.var(s.agent);
  if (s.complete_by)
    w.time(*s.complete_by, base);
  w.var(s.failure_count);
  w.var(s.compensation_failures);
  w.var(s.attempt.value);
  if (flags & has_last_error)
    w.bytes(s.last_error);
  w.time(s.created, base);
  w.time(s.updated, base);
  if (flags & has_not_before)
    w.time(s.not_before, base);
  w.var(s.completed_seq);
}

void get_step_v2(compact_reader& r, step_record& s, timestamp base,
                 const record_limits& lim) {
  s.spec.agent_kind = r.bytes(lim.max_kind_bytes);
  s.spec.payload = r.bytes(lim.max_payload_bytes);
  s.spec.timeout = duration{r.svar()};
  if (s.spec.timeout <= duration::zero() || s.spec.agent_kind.empty())
    r.fail();
  auto flags = r.u8();
  if (flags & ~all_step_flags)
    r.fail();
  if (flags & custom_policy)
    s.spec.retry = get_policy(r, lim);
  if (flags & has_compensation) {
    compensation_spec c;
    c.agent_kind = r.bytes(lim.max_kind_bytes);
    c.payload = r.bytes(lim.max_payload_bytes);
    if (c.agent_kind.empty())
      r.fail();
    s.spec.compensation = std::move(c);
  }
  s.state = r.enumeration<step_state>(step_state_count);
  if (flags & is_locked) {
    s.locked_by.instance = r.var();
    s.locked_by.incarnation = r.var();
    if (s.locked_by == scheduler_ref{})
      r.fail(); // the flag says it is set
  }
  if (flags & has_agent) {
    s.agent = r.var();
    if (s.agent == 0)
      r.fail();
  }
  if (flags & has_deadline)
    s.complete_by = r.time(base);
  s.failure_count = r.var32();
  s.compensation_failures = r.var32();
  s.attempt.value = r.var32();
  if (flags & has_last_error) {
    s.last_error = r.bytes(lim.max_text_bytes);
    if (s.last_error.empty())
      r.fail();
  }
  s.created = r.time(base);
  s.updated = r.time(base);
  if (flags & has_not_before) {
    s.not_before = r.time(base);
    if (s.not_before.count() == 0)
      r.fail();
  }
  s.completed_seq = r.var();
}

void put_job_v2(compact_writer& w, const job_record& j) {
  w.bytes(j.id.value);
  w.u8(static_cast<uint8_t>(j.state));
  w.var(j.step_count);
  w.var(j.current.value);
  w.var(j.failure_threshold);
  w.svar(j.recovery_backoff.count());
  w.svar(j.created.count());
  w.time(j.updated, j.created);
  w.var(j.completions);
  w.var(j.next_event);
  w.bytes(j.last_error);
}

void get_job_v2(compact_reader& r, job_record& j, const record_limits& lim) {
  j.id.value = r.bytes(lim.max_id_bytes);
  j.state = r.enumeration<job_state>(step_state_count);
  j.step_count = r.var32();
  j.current.value = r.var32();
  j.failure_threshold = r.var32();
  j.recovery_backoff = duration{r.svar()};
  j.created = timestamp{r.svar()};
  j.updated = r.time(j.created);
  j.completions = r.var();
  j.next_event = r.var();
  j.last_error = r.bytes(lim.max_text_bytes);
  if (j.id.value.empty() || j.step_count == 0 || j.step_count > lim.max_steps
      || j.current.value > j.step_count || j.failure_threshold == 0
      || j.failure_threshold > lim.max_failure_threshold
      || j.recovery_backoff < duration::zero())
    r.fail();
}

void put_event_v2(compact_writer& w, const job_event& e, timestamp base) {
  w.var(e.seq);
  w.u8(static_cast<uint8_t>(e.kind));
  w.var(e.step.value);
  w.var(e.attempt.value);
  w.time(e.at, base);
  w.bytes(e.detail);
}

void get_event_v2(compact_reader& r, job_event& e, timestamp base,
                  const record_limits& lim) {
  e.seq = r.var();
  e.kind = r.enumeration<event_kind>(event_kind_count);
  e.step.value = r.var32();
  e.attempt.value = r.var32();
  e.at = r.time(base);
  e.detail = r.bytes(lim.max_text_bytes);
}

result<job_view> decode_doc_v2(std::string_view bytes, const record_limits& lim) {
  compact_reader r{bytes.substr(2)}; // after the header
  job_view v;
  get_job_v2(r, v.job, lim);
  if (!r.ok()) // step_count is bounded only if the job body was valid
    return errc::corrupt_record;
  auto base = v.job.created;
  v.steps.reserve(v.job.step_count);
  size_t spec_total = 0;
  for (uint32_t i = 0; i < v.job.step_count && r.ok(); ++i) {
    step_record s;
    s.job = v.job.id;
    s.index = step_index{i};
    get_step_v2(r, s, base, lim);
    spec_total += spec_bytes(s.spec);
    v.steps.push_back(std::move(s));
  }
  if (spec_total > lim.max_spec_bytes)
    r.fail();
  auto n = r.var();
  if (!r.ok() || n > job_doc_events)
    return errc::corrupt_record;
  v.events.reserve(n);
  uint64_t last = 0;
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    job_event e;
    e.job = v.job.id;
    get_event_v2(r, e, base, lim);
    if (e.seq <= last || e.seq >= v.job.next_event)
      r.fail(); // increasing, and issued already
    last = e.seq;
    v.events.push_back(std::move(e));
  }
  if (!r.ok() || !r.at_end())
    return errc::corrupt_record;
  return v;
}

result<job_view> decode_doc_v1(std::string_view bytes, const record_limits& lim) {
  checked_reader r{bytes.substr(2)}; // after the header
  job_view v;
  get_job_body(r, v.job, lim);
  if (!r.ok()) // step_count is bounded only if the job body was valid
    return errc::corrupt_record;
  v.steps.reserve(v.job.step_count);
  size_t spec_total = 0;
  for (uint32_t i = 0; i < v.job.step_count && r.ok(); ++i) {
    step_record s;
    s.job = v.job.id;
    s.index = step_index{i};
    get_step_body(r, s, lim);
    spec_total += spec_bytes(s.spec);
    v.steps.push_back(std::move(s));
  }
  if (spec_total > lim.max_spec_bytes)
    r.fail();
  auto n = r.u32();
  if (!r.ok() || n > job_doc_events)
    return errc::corrupt_record;
  v.events.reserve(n);
  uint64_t last = 0;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    job_event e;
    e.job = v.job.id;
    get_event_body(r, e, lim);
    if (e.seq <= last || e.seq >= v.job.next_event)
      r.fail(); // increasing, and issued already
    last = e.seq;
    v.events.push_back(std::move(e));
  }
  return finish(r, std::move(v));
}

} // namespace

// -- document --------------------------------------------------------------------------

std::string encode_doc(const job_view& v) {
  size_t n = 48 + v.job.id.value.size() + v.job.last_error.size();
  for (auto& s : v.steps)
    n += 48 + spec_bytes(s.spec) + s.last_error.size();
  for (auto& e : v.events)
    n += 24 + e.detail.size();
  std::string out;
  out.reserve(n);
  out.push_back(static_cast<char>(tag::doc));
  out.push_back(static_cast<char>(doc_version));
  compact_writer w{out};
  put_job_v2(w, v.job);
  // job.step_count steps follow (a view always has that many).
  for (auto& s : v.steps)
    put_step_v2(w, s, v.job.created);
  w.var(v.events.size());
  for (auto& e : v.events)
    put_event_v2(w, e, v.job.created);
  return out;
}

std::string encode_doc_v1(const job_view& v) {
  size_t n = 128 + v.job.id.value.size() + v.job.last_error.size();
  for (auto& s : v.steps)
    n += step_size(s);
  for (auto& e : v.events)
    n += 40 + e.detail.size();
  std::string out;
  out.reserve(n);
  byte_writer w{out};
  header(w, tag::doc, 1);
  put_job_body(w, v.job);
  // job.step_count steps follow (a view always has that many).
  for (auto& s : v.steps)
    put_step_body(w, s);
  w.u32(static_cast<uint32_t>(v.events.size()));
  for (auto& e : v.events)
    put_event_body(w, e);
  return out;
}

result<job_view> decode_doc(std::string_view bytes, const record_limits& lim) {
  if (bytes.size() < 2
      || static_cast<uint8_t>(bytes[0]) != static_cast<uint8_t>(tag::doc))
    return errc::corrupt_record;
  switch (static_cast<uint8_t>(bytes[1])) {
  case 1:
    return decode_doc_v1(bytes, lim);
  case doc_version:
    return decode_doc_v2(bytes, lim);
  default:
    return errc::unsupported_version;
  }
}

// -- term ------------------------------------------------------------------------------

std::string encode_term(const term& t) {
  std::string out;
  byte_writer w{out};
  header(w, tag::term);
  w.u64(t.epoch);
  w.u64(t.leader.value);
  w.u64(t.incarnation);
  return out;
}

result<term> decode_term(std::string_view bytes) {
  checked_reader r{bytes};
  if (auto h = check_header(r, tag::term); !h)
    return h.error();
  term t;
  t.epoch = r.u64();
  t.leader.value = r.u64();
  t.incarnation = r.u64();
  return finish(r, std::move(t));
}

// -- keys ------------------------------------------------------------------------------

std::string event_key(const job_id& j, uint64_t seq) {
  std::string k = j.value;
  k.push_back('\0');
  put_be(k, seq, 8);
  return k;
}

std::pair<std::string, std::string> job_key_range(const job_id& j) {
  auto from = j.value;
  from.push_back('\0');
  auto to = j.value;
  to.push_back('\1');
  return {std::move(from), std::move(to)};
}

std::string due_key(timestamp complete_by, const job_id& j, step_index s) {
  std::string k;
  put_be(k, order_preserving(complete_by), 8);
  k += j.value;
  k.push_back('\0');
  put_be(k, s.value, 4);
  return k;
}

std::string due_bound(timestamp t) {
  std::string k;
  put_be(k, order_preserving(t + timestamp{1}), 8);
  return k;
}

result<due_entry> decode_due_key(std::string_view key, const record_limits& lim) {
  // 8 bytes deadline, id, '\0', 4 bytes step.
  if (key.size() < 8 + 1 + 1 + 4 || key.size() > 8 + lim.max_id_bytes + 1 + 4)
    return errc::corrupt_record;
  auto id_end = key.size() - 5;
  if (key[id_end] != '\0')
    return errc::corrupt_record;
  due_entry e;
  e.complete_by =
      timestamp{static_cast<int64_t>(get_be(key, 0, 8) ^ (uint64_t{1} << 63))};
  e.job.value = std::string{key.substr(8, id_end - 8)};
  e.step.value = static_cast<uint32_t>(get_be(key, id_end + 1, 4));
  if (e.job.value.find('\0') != std::string::npos)
    return errc::corrupt_record;
  return e;
}

} // namespace conclave::workflow
