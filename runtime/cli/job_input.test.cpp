#include "runtime/cli/job_input.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

namespace job = conclave::cli::job;
namespace wf = conclave::workflow;
using namespace std::chrono_literals;

namespace {

/// A line for the user: one line, not empty.
void expect_one_line(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\r'), std::string::npos) << line;
}

std::string error_of(std::string_view json_text, const job::submit_flags& f = {}) {
  auto r = job::spec_from_json(json_text, f);
  EXPECT_FALSE(r) << json_text;
  if (r)
    return {};
  expect_one_line(r.error());
  return r.error();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

// -- STEP arguments -------------------------------------------------------------------

TEST(job_step, kind_and_payload_split_at_the_first_colon) {
  auto s = job::parse_step("exec:echo a:b", {});
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().agent_kind, "exec");
  EXPECT_EQ(s.value().payload, "echo a:b");
  EXPECT_EQ(s.value().timeout, std::chrono::nanoseconds{30s});
  EXPECT_EQ(s.value().retry.max_attempts, wf::retry_policy{}.max_attempts);
}

TEST(job_step, a_kind_alone_has_an_empty_payload_and_an_empty_payload_is_allowed) {
  auto a = job::parse_step("sleep", {});
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().payload, "");
  auto b = job::parse_step("sleep:", {});
  ASSERT_TRUE(b);
  EXPECT_EQ(b.value().agent_kind, "sleep");
  EXPECT_EQ(b.value().payload, "");
}

TEST(job_step, the_flags_give_every_step_its_timeout_and_attempts) {
  job::submit_flags f;
  f.timeout = 200ms;
  f.attempts = 5;
  auto s = job::parse_step("fail:permanent", f);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value().timeout, std::chrono::nanoseconds{200ms});
  EXPECT_EQ(s.value().retry.max_attempts, 5u);
}

TEST(job_step, no_kind_a_spaced_kind_or_a_huge_payload_is_one_line) {
  for (auto text : {std::string{""}, std::string{":payload"}, std::string{"a b:c"},
                    std::string{"ex\nec:x"}, std::string(101, 'k'),
                    "exec:" + std::string(64 * 1024 + 1, 'p')}) {
    auto s = job::parse_step(text, {});
    ASSERT_FALSE(s) << text.substr(0, 20);
    expect_one_line(s.error());
    EXPECT_LT(s.error().size(), 300u);
  }
}

TEST(job_step, a_payload_at_the_limit_is_accepted) {
  auto s = job::parse_step("exec:" + std::string(64 * 1024, 'p'), {});
  EXPECT_TRUE(s);
}

TEST(job_args, an_empty_job_is_refused_and_says_how_to_give_steps) {
  auto r = job::spec_from_args({}, {});
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error(), "no steps")) << r.error();
}

TEST(job_args, id_and_threshold_come_from_the_flags) {
  job::submit_flags f;
  f.id = "nightly-1";
  f.failure_threshold = 7;
  auto r = job::spec_from_args({"sleep:50", "exec:true"}, f);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r.value().id.value, "nightly-1");
  EXPECT_EQ(r.value().failure_threshold, 7u);
  ASSERT_EQ(r.value().steps.size(), 2u);
  EXPECT_EQ(r.value().steps[1].agent_kind, "exec");
}

TEST(job_args, bad_threshold_attempts_timeout_and_id_are_refused) {
  auto refused = [](job::submit_flags f, const std::string& part) {
    auto r = job::spec_from_args({"sleep:1"}, f);
    ASSERT_FALSE(r) << part;
    expect_one_line(r.error());
    EXPECT_TRUE(has(r.error(), part)) << r.error();
  };
  job::submit_flags f;
  f.failure_threshold = 0;
  refused(f, "failure threshold");
  f = {};
  f.failure_threshold = 1001;
  refused(f, "failure threshold");
  f = {};
  f.attempts = 0;
  refused(f, "attempts");
  f = {};
  f.timeout = 0ns;
  refused(f, "timeout");
  f = {};
  f.id = std::string(201, 'i');
  refused(f, "job id");
  f = {};
  f.id = "a\nb";
  refused(f, "control character");
}

TEST(job_args, too_many_steps_or_too_many_bytes_in_all_are_refused) {
  std::vector<std::string> many(65, "sleep:1");
  auto r = job::spec_from_args(many, {});
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error(), "at most 64")) << r.error();
  // Nine full payloads: each within its limit, 576 KiB in all.
  std::vector<std::string> big(9, "exec:" + std::string(64 * 1024, 'x'));
  auto b = job::spec_from_args(big, {});
  ASSERT_FALSE(b);
  EXPECT_TRUE(has(b.error(), "add up to")) << b.error();
}

// -- spec files -----------------------------------------------------------------------

TEST(job_file, a_full_spec_reads_every_field) {
  auto r = job::spec_from_json(R"({
    "id": "deploy-7", "failure_threshold": 2, "recovery_backoff_ms": 250,
    "steps": [
      {"kind": "exec", "payload": "make", "timeout_ms": 60000, "attempts": 1},
      {"kind": "exec", "payload": "ship",
       "compensate": {"kind": "exec", "payload": "unship"}}
    ]})",
                               {});
  ASSERT_TRUE(r) << r.error();
  auto& s = r.value();
  EXPECT_EQ(s.id.value, "deploy-7");
  EXPECT_EQ(s.failure_threshold, 2u);
  EXPECT_EQ(s.recovery_backoff, std::chrono::nanoseconds{250ms});
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].timeout, std::chrono::nanoseconds{60s});
  EXPECT_EQ(s.steps[0].retry.max_attempts, 1u);
  EXPECT_EQ(s.steps[1].timeout, std::chrono::nanoseconds{30s});
  ASSERT_TRUE(s.steps[1].compensation);
  EXPECT_EQ(s.steps[1].compensation->payload, "unship");
}

TEST(job_file, flags_override_the_file_and_fill_what_a_step_leaves_out) {
  job::submit_flags f;
  f.id = "from-flag";
  f.failure_threshold = 9;
  f.timeout = 5s;
  f.attempts = 4;
  auto r = job::spec_from_json(
      R"({"id": "from-file", "failure_threshold": 2,
          "steps": [{"kind": "a"}, {"kind": "b", "timeout_ms": 10, "attempts": 2}]})",
      f);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r.value().id.value, "from-flag");
  EXPECT_EQ(r.value().failure_threshold, 9u);
  EXPECT_EQ(r.value().steps[0].timeout, std::chrono::nanoseconds{5s});
  EXPECT_EQ(r.value().steps[0].retry.max_attempts, 4u);
  EXPECT_EQ(r.value().steps[1].timeout, std::chrono::nanoseconds{10ms});
  EXPECT_EQ(r.value().steps[1].retry.max_attempts, 2u);
}

TEST(job_file, each_wrong_shape_is_named) {
  EXPECT_TRUE(has(error_of("{"), "not valid JSON (at line 1"));
  EXPECT_TRUE(has(error_of("{\n\n  \"steps\": [x]}"), "line 3"));
  EXPECT_TRUE(has(error_of("[]"), "expected a JSON object"));
  EXPECT_TRUE(has(error_of("{}"), "no \"steps\""));
  EXPECT_TRUE(has(error_of(R"({"steps": []})"), "no steps"));
  EXPECT_TRUE(has(error_of(R"({"steps": {}})"), "expected an array"));
  EXPECT_TRUE(has(error_of(R"({"steps": [1]})"), "steps[0]: expected an object"));
  EXPECT_TRUE(has(error_of(R"({"steps": [{}]})"), "steps[0]: no \"kind\""));
  EXPECT_TRUE(
      has(error_of(R"({"steps": [{"kind": 3}]})"), "steps[0].kind: expected a string"));
  EXPECT_TRUE(has(error_of(R"({"steps": [{"kind": "a", "timeout_ms": 0}]})"),
                  "steps[0].timeout_ms: expected an integer from 1"));
  EXPECT_TRUE(
      has(error_of(R"({"steps": [{"kind": "a", "timeout_ms": -5}]})"), "timeout_ms"));
  EXPECT_TRUE(
      has(error_of(R"({"steps": [{"kind": "a", "attempts": 1.5}]})"), "attempts"));
  EXPECT_TRUE(has(error_of(R"({"steps": [{"kind": "a"}], "failure_treshold": 3})"),
                  "unknown field 'failure_treshold'"));
  EXPECT_TRUE(has(error_of(R"({"steps": [{"kind": "a", "payload": 5}]})"),
                  "payload: expected a string"));
  EXPECT_TRUE(
      has(error_of(R"({"steps": [{"kind": "a", "compensate": "x"}]})"), "compensate"));
  EXPECT_TRUE(has(error_of(R"({"id": 7, "steps": [{"kind": "a"}]})"), "id: expected"));
  EXPECT_TRUE(
      has(error_of(R"({"steps": [{"kind": "a"}], "failure_threshold": 99999999999999})"),
          "failure_threshold"));
}

TEST(job_file, deep_nesting_and_oversized_text_are_refused_before_any_work) {
  std::string deep(100000, '[');
  EXPECT_TRUE(has(error_of(deep), "not valid JSON") || has(error_of(deep), "nested"));
  std::string nested = std::string(20, '[') + std::string(20, ']');
  EXPECT_TRUE(has(error_of(nested), "nested deeper"));
  std::string huge(job::max_spec_file_bytes + 1, ' ');
  EXPECT_TRUE(has(error_of(huge), "at most"));
}

TEST(job_file, error_lines_never_carry_raw_bytes_of_the_input) {
  auto e = error_of("{\"steps\": [{\"kind\": \"a\"}], \"\\u0001\\n\": 1}");
  EXPECT_TRUE(has(e, "\\x01")) << e;
  auto bad_utf8 = error_of("{\"steps\": \"\xff\xfe\"}");
  EXPECT_TRUE(std::none_of(bad_utf8.begin(), bad_utf8.end(), [](char c) {
    return static_cast<unsigned char>(c) >= 0x80;
  })) << bad_utf8;
}

TEST(job_file, random_text_and_random_json_never_crash_and_answer_one_line) {
  std::mt19937_64 rng{42};
  const std::string alphabet = "{}[]:,\"\\ 0123456789-.eEtruefalsnul"
                               "\"kind\"\"steps\"\"payload\"\"timeout_ms\"\n\t\x01\xff";
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    auto len = rng() % (i % 100 == 0 ? 5000 : 80);
    if (i % 3 == 0) {
      // Mutations of a valid spec: most are still JSON, with wrong values.
      text = R"({"id": "x", "steps": [{"kind": "a", "payload": "p", "timeout_ms": 5}]})";
      for (size_t m = 0; m < 1 + rng() % 4; ++m) {
        auto at = rng() % text.size();
        switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1 + rng() % 5);
          break;
        default:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        }
        if (text.empty())
          break;
      }
    } else {
      for (size_t k = 0; k < len; ++k)
        text += i % 2 ? alphabet[rng() % alphabet.size()] : static_cast<char>(rng());
    }
    auto r = job::spec_from_json(text, {});
    if (r) {
      ++accepted;
      EXPECT_FALSE(job::check_limits(r.value())) << text;
    } else {
      expect_one_line(r.error());
      EXPECT_LT(r.error().size(), 400u) << r.error();
    }
  }
  EXPECT_GT(accepted, 0u); // the mutations do keep some specs valid
}

TEST(job_file, random_step_arguments_never_crash_and_answer_one_line) {
  std::mt19937_64 rng{7};
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    auto len = rng() % (i % 500 == 0 ? 70000 : 40);
    for (size_t k = 0; k < len; ++k)
      text += static_cast<char>(rng() % 4 == 0 ? ':' : rng());
    auto r = job::parse_step(text, {});
    if (!r) {
      expect_one_line(r.error());
      EXPECT_LT(r.error().size(), 300u);
    } else {
      EXPECT_FALSE(r.value().agent_kind.empty());
    }
  }
}

TEST(job_file, a_missing_file_and_a_file_too_large_name_the_file) {
  auto r = job::spec_from_file("/nonexistent/spec.json", {});
  ASSERT_FALSE(r);
  EXPECT_TRUE(has(r.error(), "--file /nonexistent/spec.json: cannot be read"))
      << r.error();
  auto path = std::filesystem::temp_directory_path()
              / ("conclave-job-spec-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out{path};
    out << R"({"steps": [{"kind": "sleep", "payload": "5"}]})";
  }
  auto ok = job::spec_from_file(path.string(), {});
  EXPECT_TRUE(ok) << ok.error();
  {
    std::ofstream out{path};
    out << std::string(job::max_spec_file_bytes + 10, ' ');
  }
  auto big = job::spec_from_file(path.string(), {});
  ASSERT_FALSE(big);
  EXPECT_TRUE(has(big.error(), "larger than")) << big.error();
  std::filesystem::remove(path);
}

// -- kinds and states -----------------------------------------------------------------

TEST(job_kinds, an_unserved_kind_names_the_step_and_the_served_kinds) {
  auto spec = job::spec_from_args({"sleep:1", "teleport:x"}, {});
  ASSERT_TRUE(spec);
  EXPECT_FALSE(job::check_kinds(spec.value(), {"sleep", "teleport"}));
  auto e = job::check_kinds(spec.value(), {"exec", "sleep"});
  ASSERT_TRUE(e);
  EXPECT_TRUE(has(*e, "unknown agent kind 'teleport' in step 1")) << *e;
  EXPECT_TRUE(has(*e, "exec, sleep")) << *e;
  auto none = job::check_kinds(spec.value(), {});
  ASSERT_TRUE(none);
  EXPECT_TRUE(has(*none, "no node of the cluster serves any kind")) << *none;
}

TEST(job_kinds, a_compensation_kind_must_be_served_too) {
  auto spec = job::spec_from_json(
      R"({"steps": [{"kind": "a", "compensate": {"kind": "undo"}}]})", {});
  ASSERT_TRUE(spec) << spec.error();
  auto e = job::check_kinds(spec.value(), {"a"});
  ASSERT_TRUE(e);
  EXPECT_TRUE(has(*e, "(compensation)")) << *e;
}

TEST(job_states, every_state_name_reads_back) {
  for (uint8_t i = 0; i < wf::step_state_count; ++i) {
    auto s = static_cast<wf::step_state>(i);
    EXPECT_EQ(job::parse_state(wf::to_string(s)), s);
  }
  EXPECT_FALSE(job::parse_state("done"));
  EXPECT_FALSE(job::parse_state(""));
}

TEST(job_shown, control_bytes_are_escaped_and_long_text_is_cut) {
  EXPECT_EQ(job::shown("a\nb\tc\x01"), "a\\nb\\tc\\x01");
  EXPECT_EQ(job::shown(std::string(100, 'x'), 10), std::string(10, 'x') + "...");
}
