// Record encoding: round trips, bounds, versions, ordered keys, submission
// validation, and random mutations that must decode to a value or an error,
// never crash.
#include "protocols/workflow/records.hpp"

#include "protocols/store/store_core.hpp"
#include "protocols/workflow/lifecycle.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace conclave::workflow;
using namespace std::chrono_literals;

namespace {

job_spec sample_spec() {
  job_spec s;
  s.id = job_id{"order-17"};
  s.failure_threshold = 4;
  s.recovery_backoff = 20ms;
  step_spec pay;
  pay.agent_kind = "payment";
  pay.payload = std::string("\x00\x01\xff amount=10", 14);
  pay.timeout = 250ms;
  pay.retry.non_retryable = {"card_declined", "fraud"};
  pay.compensation = compensation_spec{"refund", "r"};
  step_spec ship;
  ship.agent_kind = "shipping";
  s.steps = {pay, ship};
  return s;
}

job_view sample_view() {
  effects e;
  auto v = make_job(sample_spec(), timestamp{3ms}, e);
  auto c = claim(v, scheduler_ref{7, 9}, timestamp{5ms});
  EXPECT_TRUE(c);
  v.steps[0].last_error = "busy: try later";
  v.steps[0].failure_count = 2;
  return v;
}

auto all_known = [](const std::string&) { return true; };

/// `v` encoded in the version `bytes` carries (a mutation may turn a
/// version 2 document into one that reads as version 1).
std::string reencode(const job_view& v, const std::string& bytes) {
  return bytes[1] == 1 ? encode_doc_v1(v) : encode_doc(v);
}

/// What workflow_cluster_bench submits as a pending job: one step of a kind
/// no node serves, no payload, default policy.
job_view pending_job(const std::string& id, timestamp now) {
  job_spec s;
  s.id = job_id{id};
  step_spec st;
  st.agent_kind = "bench-unserved";
  st.timeout = 30s;
  s.steps.push_back(st);
  effects e;
  return make_job(s, now, e);
}

/// sample_view() with events in its document, as the job store keeps them.
job_view sample_doc() {
  auto v = sample_view();
  for (uint64_t seq = 2; seq < 6; ++seq) {
    job_event e;
    e.job = v.job.id;
    e.seq = seq;
    e.kind = static_cast<event_kind>(seq % event_kind_count);
    e.step = step_index{static_cast<uint32_t>(seq % 2)};
    e.attempt = attempt{static_cast<uint32_t>(seq)};
    e.at = timestamp{std::chrono::milliseconds(seq)};
    e.detail = "detail " + std::to_string(seq);
    v.events.push_back(e);
  }
  v.job.next_event = 6;
  return v;
}

} // namespace

TEST(records, events_and_terms_round_trip) {
  effects e;
  make_job(sample_spec(), timestamp{3ms}, e);
  auto ev = decode_event(encode(e.events[0]));
  ASSERT_TRUE(ev);
  EXPECT_EQ(encode(ev.value()), encode(e.events[0]));
  EXPECT_EQ(ev.value().kind, event_kind::received);
  EXPECT_EQ(ev.value().job, job_id{"order-17"});
  conclave::election::term t{3, conclave::election::node_id{2}, 5};
  auto dt = decode_term(encode_term(t));
  ASSERT_TRUE(dt);
  EXPECT_EQ(dt.value(), t);
}

TEST(records, a_record_of_another_kind_or_version_is_refused) {
  auto bytes = encode_doc(sample_view());
  EXPECT_EQ(decode_event(bytes).error(), errc::corrupt_record);
  EXPECT_EQ(decode_doc(encode_term(conclave::election::term{})).error(),
            errc::corrupt_record);
  EXPECT_EQ(decode_doc("").error(), errc::corrupt_record);
  EXPECT_EQ(decode_doc(bytes + "x").error(), errc::corrupt_record);
  for (char version : {'\0', '\3', '\xff'}) {
    bytes[1] = version;
    EXPECT_EQ(decode_doc(bytes).error(), errc::unsupported_version);
  }
}

TEST(records, decode_enforces_the_same_bounds_as_submission) {
  auto v = sample_view();
  record_limits small;
  small.max_payload_bytes = 4;
  EXPECT_EQ(decode_doc(encode_doc(v), small).error(), errc::corrupt_record);
  auto bad = v;
  bad.steps[1].spec.timeout = 0ms;
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad = v;
  bad.steps[1].spec.retry.jitter = 2.0;
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad = v;
  bad.job.failure_threshold = 0;
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
}

TEST(records, random_mutations_decode_to_a_value_or_an_error) {
  auto v = sample_view();
  std::vector<std::string> inputs{encode_doc(v), encode_doc(sample_doc()),
                                  encode_doc_v1(v), encode_doc_v1(sample_doc())};
  effects e;
  make_job(sample_spec(), timestamp{0}, e);
  inputs.push_back(encode(e.events[0]));
  std::mt19937_64 rng{12345};
  size_t decoded = 0, refused = 0;
  for (int round = 0; round < 20000; ++round) {
    auto bytes = inputs[rng() % inputs.size()];
    auto n = 1 + rng() % 4;
    for (size_t k = 0; k < n; ++k) {
      switch (rng() % 4) {
      case 0: // flip a byte
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
        break;
      case 1: // truncate
        bytes.resize(rng() % bytes.size());
        break;
      case 2: // huge length field somewhere
        if (bytes.size() > 6) {
          auto at = 2 + rng() % (bytes.size() - 6);
          bytes[at] = bytes[at + 1] = bytes[at + 2] = bytes[at + 3] = '\xff';
        }
        break;
      default: // garbage appended
        bytes += std::string(rng() % 16, static_cast<char>(rng()));
      }
      if (bytes.empty())
        bytes = "\x01";
    }
    for (auto r : {decode_doc(bytes).has_value(), decode_event(bytes).has_value(),
                   decode_term(bytes).has_value(), decode_due_key(bytes).has_value()})
      (r ? decoded : refused) += 1;
    // A decoded document re-encodes to the same bytes: nothing half-parsed.
    if (auto d = decode_doc(bytes)) {
      EXPECT_EQ(reencode(d.value(), bytes), bytes);
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(decoded + refused, 20000u * 4);
  EXPECT_GT(decoded, 0u);
}

TEST(records, due_keys_sort_by_deadline_then_job_then_step) {
  std::vector<std::string> keys{
      due_key(timestamp{2s}, job_id{"a"}, step_index{0}),
      due_key(timestamp{1s}, job_id{"b"}, step_index{3}),
      due_key(timestamp{1s}, job_id{"b"}, step_index{1}),
      due_key(timestamp{1s}, job_id{"a"}, step_index{9}),
      due_key(timestamp{300s}, job_id{"a"}, step_index{0}),
  };
  std::sort(keys.begin(), keys.end());
  std::vector<std::pair<std::string, uint32_t>> got;
  for (auto& k : keys) {
    auto e = decode_due_key(k);
    ASSERT_TRUE(e);
    got.emplace_back(e.value().job.value, e.value().step.value);
  }
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint32_t>>{
                     {"a", 9}, {"b", 1}, {"b", 3}, {"a", 0}, {"a", 0}}));
  EXPECT_LT(keys[2], due_bound(timestamp{1s}));
  EXPECT_GT(keys[3], due_bound(timestamp{1s}));
  EXPECT_EQ(decode_due_key(keys[0]).value().complete_by, timestamp{1s});
}

TEST(records, event_keys_of_a_job_fall_in_its_range_only) {
  auto [from, to] = job_key_range(job_id{"ab"});
  auto in = event_key(job_id{"ab"}, 5);
  auto other = event_key(job_id{"abc"}, 0);
  EXPECT_TRUE(from <= in && in < to);
  EXPECT_FALSE(from <= other && other < to);
  EXPECT_LT(event_key(job_id{"ab"}, 1), event_key(job_id{"ab"}, 256));
  EXPECT_LT(event_key(job_id{"ab"}, 2), event_key(job_id{"ab"}, 10));
}

TEST(records, bad_submissions_get_clear_errors) {
  record_limits lim;
  auto s = sample_spec();
  EXPECT_TRUE(validate(s, lim, all_known));
  auto bad = s;
  bad.steps.clear();
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::empty_job);
  bad = s;
  bad.steps[1].timeout = 0ms;
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::zero_timeout);
  bad = s;
  bad.steps[0].payload.assign(lim.max_payload_bytes + 1, 'x');
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::too_large);
  auto only_payment = [](const std::string& k) { return k == "payment"; };
  EXPECT_EQ(validate(s, lim, only_payment).error(), errc::unknown_agent_kind);
  bad = s;
  bad.id.value = std::string("a\0b", 3);
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::bad_argument);
  bad = s;
  bad.failure_threshold = 0;
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::bad_argument);
  bad = s;
  bad.steps[0].retry.max_attempts = 0;
  EXPECT_EQ(validate(bad, lim, all_known).error(), errc::bad_argument);
}

// -- documents -------------------------------------------------------------------------

TEST(records, documents_round_trip) {
  auto v = sample_doc();
  auto bytes = encode_doc(v);
  auto d = decode_doc(bytes);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_EQ(encode_doc(d.value()), bytes);
  EXPECT_EQ(d.value().job.recovery_backoff, 20ms);
  ASSERT_EQ(d.value().steps.size(), v.steps.size());
  for (size_t i = 0; i < v.steps.size(); ++i) { // the id and index come from the doc
    auto& s = d.value().steps[i];
    EXPECT_EQ(s.job, v.job.id);
    EXPECT_EQ(s.index.value, i);
    EXPECT_EQ(s.spec, v.steps[i].spec);
    EXPECT_EQ(s.complete_by, v.steps[i].complete_by);
    EXPECT_EQ(s.locked_by, v.steps[i].locked_by);
    EXPECT_EQ(s.last_error, v.steps[i].last_error);
  }
  ASSERT_EQ(d.value().events.size(), v.events.size());
  for (size_t i = 0; i < v.events.size(); ++i)
    EXPECT_EQ(encode(d.value().events[i]), encode(v.events[i]));
  // Without events (a pending job), and refused as any other record kind.
  auto plain = sample_view();
  EXPECT_TRUE(decode_doc(encode_doc(plain)));
}

TEST(records, version_1_documents_written_before_still_decode) {
  for (auto v : {sample_view(), sample_doc()}) {
    auto old = encode_doc_v1(v);
    ASSERT_EQ(old[1], 1);
    auto d = decode_doc(old);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(encode_doc_v1(d.value()), old);
    // The same job as the current format has it: rewritten in version 2
    // the next time it changes.
    EXPECT_EQ(encode_doc(d.value()), encode_doc(v));
    EXPECT_LT(encode_doc(v).size(), old.size());
  }
}

TEST(records, a_pending_job_document_takes_few_bytes_beyond_its_strings) {
  // Times since the epoch in ns, as nodes stamp them: the one absolute time
  // takes 9 bytes, the others are offsets from it.
  auto v =
      pending_job("b12345678-mp-99999", timestamp{std::chrono::seconds{1'764'000'000}});
  auto strings = v.job.id.value.size() + v.steps[0].spec.agent_kind.size();
  auto doc = encode_doc(v);
  EXPECT_LE(doc.size(), strings + 45) << "compact document grew";
  EXPECT_GE(encode_doc_v1(v).size(), strings + 190); // what version 1 took
  ASSERT_TRUE(decode_doc(doc));
  EXPECT_EQ(encode_doc(decode_doc(doc).value()), doc);
}

TEST(records, a_document_with_an_overlong_number_is_corrupt) {
  // Only the shortest encoding of a number is accepted, so that a decoded
  // document re-encodes to its own bytes (stores compare documents by bytes).
  auto v = pending_job("j", timestamp{5s});
  auto doc = encode_doc(v);
  ASSERT_EQ(doc.back(), '\0'); // the event count, 0
  auto overlong = doc.substr(0, doc.size() - 1) + std::string("\x80\x00", 2);
  EXPECT_EQ(decode_doc(overlong).error(), errc::corrupt_record);
  auto past_64_bits = doc.substr(0, doc.size() - 1) + std::string(9, '\xff') + "\x7f";
  EXPECT_EQ(decode_doc(past_64_bits).error(), errc::corrupt_record);
}

TEST(records, a_document_breaking_its_invariants_is_corrupt) {
  auto v = sample_doc();
  auto bad = v;
  bad.events[2].seq = bad.events[1].seq; // not increasing
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad = v;
  bad.job.next_event = bad.events.back().seq; // an event not issued yet
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad = v;
  while (bad.events.size() <= job_doc_events) { // one event too many
    auto e = bad.events.back();
    ++e.seq;
    bad.events.push_back(e);
  }
  bad.job.next_event = bad.events.back().seq + 1;
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad.events.pop_back();
  EXPECT_TRUE(decode_doc(encode_doc(bad)));
  bad = v;
  bad.steps.pop_back(); // fewer steps than step_count
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  bad = v;
  bad.events[0].kind = static_cast<event_kind>(event_kind_count);
  EXPECT_EQ(decode_doc(encode_doc(bad)).error(), errc::corrupt_record);
  record_limits small;
  small.max_spec_bytes = spec_bytes(v.steps[0].spec); // step 1 does not fit
  EXPECT_EQ(decode_doc(encode_doc(v), small).error(), errc::corrupt_record);
}

TEST(records, every_truncation_and_random_flips_of_a_document_decode_or_fail) {
  auto bytes = encode_doc(sample_doc());
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_EQ(decode_doc(bytes.substr(0, n)).error(), errc::corrupt_record) << n;
  std::mt19937_64 rng{2026};
  size_t decoded = 0, refused = 0;
  for (int round = 0; round < 5000; ++round) {
    auto b = bytes;
    auto n = 1 + rng() % 3;
    for (size_t k = 0; k < n; ++k) {
      auto at = rng() % b.size();
      if (rng() % 4 == 0 && at + 4 <= b.size()) // a huge length or count
        b[at] = b[at + 1] = b[at + 2] = b[at + 3] = '\xff';
      else
        b[at] = static_cast<char>(rng());
    }
    auto d = decode_doc(b);
    if (d) {
      ++decoded;
      EXPECT_EQ(reencode(d.value(), b), b); // nothing half-parsed
    } else {
      ++refused;
      EXPECT_TRUE(d.error() == errc::corrupt_record
                  || d.error() == errc::unsupported_version);
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(decoded, 0u); // flips inside text or counters stay valid documents
}

// The largest document a valid job can reach fits the store's value limit:
// max_steps steps sharing max_spec_bytes of spec, the longest id and last
// errors, job_doc_events events with the longest detail.
TEST(records, the_largest_document_fits_a_store_value) {
  record_limits lim;
  job_spec spec;
  spec.id.value.assign(lim.max_id_bytes, 'i');
  for (size_t i = 0; i < lim.max_steps; ++i) {
    step_spec st;
    st.agent_kind.assign(lim.max_kind_bytes, 'k');
    st.retry.non_retryable.assign(lim.max_non_retryable,
                                  std::string(lim.max_kind_bytes, 'n'));
    st.compensation = compensation_spec{std::string(lim.max_kind_bytes, 'c'), ""};
    spec.steps.push_back(st);
  }
  size_t left = lim.max_spec_bytes;
  for (auto& st : spec.steps)
    left -= spec_bytes(st);
  for (auto& st : spec.steps) { // the rest of the bound as payloads
    for (auto* p : {&st.payload, &st.compensation->payload}) {
      auto n = std::min(left, lim.max_payload_bytes);
      p->assign(n, 'p');
      left -= n;
    }
  }
  ASSERT_EQ(left, 0u);
  ASSERT_TRUE(validate(spec, lim, all_known));
  auto over = spec;
  over.steps.back().payload += "x";
  EXPECT_EQ(validate(over, lim, all_known).error(), errc::too_large);
  effects e;
  auto v = make_job(spec, timestamp{1}, e);
  v.job.last_error.assign(lim.max_text_bytes, 'e');
  for (auto& s : v.steps) {
    s.last_error.assign(lim.max_text_bytes, 'e');
    s.complete_by = timestamp{5};
  }
  for (size_t i = 0; i < job_doc_events; ++i) {
    job_event ev;
    ev.job = v.job.id;
    ev.seq = v.job.next_event++;
    ev.detail.assign(lim.max_text_bytes, 'd');
    v.events.push_back(ev);
  }
  auto bytes = encode_doc(v);
  ASSERT_TRUE(decode_doc(bytes, lim));
  EXPECT_LE(bytes.size(), conclave::store::core_limits{}.max_value_bytes);
  EXPECT_GT(bytes.size(), lim.max_spec_bytes); // the bound is what matters
}
