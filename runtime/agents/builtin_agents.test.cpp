// The built-in agent kinds (builtin_agents.hpp). sleep and fail run on CAF's
// test coordinator in virtual time; exec runs real, short processes on a real
// actor system, every request bounded by a timeout.
#include "runtime/agents/builtin_agents.hpp"

#include "actors/workflow/agent.hpp"
#include "tests/support/ask.hpp"
#include "tests/support/coordinator_fixture.hpp"
#include "tests/support/temp_dir.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace conclave;
using namespace std::chrono_literals;
using agents::builtin_options;
using workflow::failure_kind;
using workflow::service_call;
using workflow::step_outcome;

namespace {

service_call make_call(std::string payload, workflow::timestamp deadline) {
  service_call c;
  c.idempotency_key = "job-1/0";
  c.attempt = workflow::attempt{3};
  c.payload = std::move(payload);
  c.deadline = deadline;
  return c;
}

// -- sleep and fail, in virtual time --------------------------------------------

class builtin_sleep_and_fail : public conclave::testing::coordinator_fixture {
protected:
  void configure(caf::actor_system_config& cfg) override {
    workflow::add_workflow_types(cfg);
  }

  /// Now in the workflow time base (clock offset 0).
  workflow::timestamp wf_now() {
    return std::chrono::duration_cast<workflow::timestamp>(now().time_since_epoch());
  }

  /// Sends `payload` with a deadline `left` from now; the reply lands in the slot.
  std::shared_ptr<reply<step_outcome>> call(const workflow::service_actor& svc,
                                            std::string payload,
                                            workflow::duration left = 10s) {
    return ask<step_outcome>(sys(), svc, make_call(std::move(payload), wf_now() + left));
  }

  /// The outcome that `payload` gets at once.
  step_outcome answer_at_once(const workflow::service_actor& svc, std::string payload) {
    auto r = call(svc, payload);
    run();
    EXPECT_TRUE(r->done) << "payload '" << payload << "'";
    EXPECT_FALSE(r->error) << "payload '" << payload << "'";
    return r->value.value_or(step_outcome{true, failure_kind::transient, "none", ""});
  }
};

TEST_F(builtin_sleep_and_fail, sleep_answers_ok_after_the_payload_milliseconds) {
  auto svc = track(agents::spawn_sleep_service(sys(), {}));
  auto r = call(svc, "100", 1s);
  advance(99ms);
  EXPECT_FALSE(r->done);
  advance(1ms);
  ASSERT_TRUE(r->done);
  ASSERT_TRUE(r->value);
  EXPECT_TRUE(r->value->ok);
}

TEST_F(builtin_sleep_and_fail, sleep_with_an_empty_or_zero_payload_answers_at_once) {
  auto svc = track(agents::spawn_sleep_service(sys(), {}));
  EXPECT_TRUE(answer_at_once(svc, "").ok);
  EXPECT_TRUE(answer_at_once(svc, "0").ok);
}

TEST_F(builtin_sleep_and_fail, sleep_answers_concurrent_calls_each_at_its_own_time) {
  auto svc = track(agents::spawn_sleep_service(sys(), {}));
  auto slow = call(svc, "50", 1s);
  auto fast = call(svc, "20", 1s);
  advance(20ms);
  EXPECT_TRUE(fast->done);
  EXPECT_FALSE(slow->done);
  advance(30ms);
  EXPECT_TRUE(slow->done);
}

TEST_F(builtin_sleep_and_fail, sleep_that_would_end_after_the_deadline_never_answers) {
  auto svc = track(agents::spawn_sleep_service(sys(), {}));
  auto late = call(svc, "501", 500ms);
  auto at_deadline = call(svc, "500", 500ms);
  auto past = call(svc, "0", -1ms);
  advance(2s);
  EXPECT_FALSE(late->done);
  EXPECT_FALSE(past->done);
  ASSERT_TRUE(at_deadline->done) << "ending exactly at the deadline is not after it";
  EXPECT_TRUE(at_deadline->value && at_deadline->value->ok);
}

TEST_F(builtin_sleep_and_fail, sleep_measures_the_deadline_with_the_clock_offset) {
  builtin_options o;
  o.clock_offset = 1h;
  auto svc = track(agents::spawn_sleep_service(sys(), o));
  // In a time base one hour ahead of the actor clock.
  auto ahead = call(svc, "100", 1h + 1s);
  // A deadline in the actor clock's own base is an hour in the past there.
  auto behind = call(svc, "100", 1s);
  advance(1s);
  EXPECT_TRUE(ahead->done);
  EXPECT_FALSE(behind->done);
}

TEST_F(builtin_sleep_and_fail,
       sleep_rejects_a_garbage_payload_as_a_permanent_bad_payload) {
  auto svc = track(agents::spawn_sleep_service(sys(), {}));
  for (auto p :
       {"abc", "-5", "+5", " 5", "5 ", "12x", "1.5", "99999999999999999999999"}) {
    auto o = answer_at_once(svc, p);
    EXPECT_FALSE(o.ok) << p;
    EXPECT_EQ(o.kind, failure_kind::permanent) << p;
    EXPECT_EQ(o.error_kind, "bad_payload") << p;
  }
}

TEST_F(builtin_sleep_and_fail, fail_defaults_to_a_transient_failure_with_a_default_text) {
  auto svc = track(agents::spawn_fail_service(sys()));
  for (auto p : {"", "transient"}) {
    auto o = answer_at_once(svc, p);
    EXPECT_FALSE(o.ok) << p;
    EXPECT_EQ(o.kind, failure_kind::transient) << p;
    EXPECT_EQ(o.error_kind, "fail") << p;
    EXPECT_FALSE(o.message.empty()) << p;
  }
}

TEST_F(builtin_sleep_and_fail, fail_answers_the_kind_and_text_its_payload_names) {
  auto svc = track(agents::spawn_fail_service(sys()));
  auto p = answer_at_once(svc, "permanent:card declined");
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.kind, failure_kind::permanent);
  EXPECT_EQ(p.error_kind, "fail");
  EXPECT_EQ(p.message, "card declined");
  auto t = answer_at_once(svc, "transient:disk: full");
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.kind, failure_kind::transient);
  EXPECT_EQ(t.message, "disk: full");
  auto bare = answer_at_once(svc, "permanent");
  EXPECT_EQ(bare.kind, failure_kind::permanent);
  EXPECT_EQ(bare.error_kind, "fail");
}

TEST_F(builtin_sleep_and_fail,
       fail_rejects_a_garbage_payload_as_a_permanent_bad_payload) {
  auto svc = track(agents::spawn_fail_service(sys()));
  for (auto p : {"sometimes", "Permanent", "permanent2", ":text", "transient "}) {
    auto o = answer_at_once(svc, p);
    EXPECT_FALSE(o.ok) << p;
    EXPECT_EQ(o.kind, failure_kind::permanent) << p;
    EXPECT_EQ(o.error_kind, "bad_payload") << p;
  }
}

TEST_F(builtin_sleep_and_fail, spawn_builtin_services_names_exec_sleep_and_fail) {
  auto services = agents::spawn_builtin_services(sys(), {});
  std::vector<std::string> names;
  for (auto& kv : services) {
    names.push_back(kv.first);
    track(kv.second);
    EXPECT_TRUE(kv.second) << kv.first;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"exec", "fail", "sleep"}));
  ASSERT_EQ(services.count("fail"), 1u);
  EXPECT_EQ(answer_at_once(services["fail"], "permanent:x").message, "x");
  ASSERT_EQ(services.count("sleep"), 1u);
  EXPECT_TRUE(answer_at_once(services["sleep"], "0").ok);
}

/// Counts the agent's retries.
struct retry_probe : workflow::workflow_probe {
  int retries = 0;
  void agent_retry() override { ++retries; }
};

TEST_F(builtin_sleep_and_fail,
       an_agent_retries_a_transient_fail_and_reports_the_last_failure) {
  auto svc = track(agents::spawn_fail_service(sys()));
  auto probe = std::make_shared<retry_probe>();
  workflow::agent_options o;
  o.id = 1;
  o.service = svc;
  o.probe = probe;
  auto agent = track(workflow::spawn_agent(sys(), o));
  workflow::dispatch d;
  d.idempotency_key = "job-1/0";
  d.payload = "transient:busy";
  d.deadline = wf_now() + 1h;
  d.retry.max_attempts = 3;
  auto r = ask<step_outcome>(sys(), agent, d);
  advance(10s, 10ms);
  ASSERT_TRUE(r->done);
  ASSERT_TRUE(r->value);
  EXPECT_FALSE(r->value->ok);
  EXPECT_EQ(r->value->error_kind, "fail");
  EXPECT_EQ(r->value->message, "busy");
  EXPECT_EQ(probe->retries, 2);
}

TEST_F(builtin_sleep_and_fail, an_agent_does_not_retry_a_permanent_fail) {
  auto svc = track(agents::spawn_fail_service(sys()));
  auto probe = std::make_shared<retry_probe>();
  workflow::agent_options o;
  o.id = 1;
  o.service = svc;
  o.probe = probe;
  auto agent = track(workflow::spawn_agent(sys(), o));
  workflow::dispatch d;
  d.payload = "permanent";
  d.deadline = wf_now() + 1h;
  auto r = ask<step_outcome>(sys(), agent, d);
  run();
  ASSERT_TRUE(r->done);
  ASSERT_TRUE(r->value);
  EXPECT_EQ(r->value->kind, failure_kind::permanent);
  EXPECT_EQ(probe->retries, 0);
}

// -- exec, with real processes --------------------------------------------------

/// Whether `pid` names a live process (a zombie waiting for a reaper other
/// than us counts as gone).
bool process_alive(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return false;
  std::ifstream stat{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  if (!std::getline(stat, line))
    return false;
  auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

/// Polls `pred` every 10 ms for at most `limit` of real time.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= until)
      return pred();
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

/// The pids a command wrote to `path`, one a line.
std::vector<pid_t> read_pids(const std::filesystem::path& path) {
  std::vector<pid_t> out;
  std::ifstream in{path};
  long p;
  while (in >> p)
    out.push_back(static_cast<pid_t>(p));
  return out;
}

class builtin_exec : public ::testing::Test {
protected:
  void SetUp() override {
    workflow::add_workflow_types(cfg_);
    cfg_.set("logger.file-verbosity", caf::atom("quiet"));
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    svc_ = agents::spawn_exec_service(*sys_, {});
  }

  void TearDown() override {
    caf::anon_send_exit(svc_, caf::exit_reason::kill);
    for (auto& s : extra_)
      caf::anon_send_exit(s, caf::exit_reason::kill);
    sys_.reset();
  }

  workflow::timestamp wf_now() {
    return std::chrono::duration_cast<workflow::timestamp>(
        sys_->clock().now().time_since_epoch());
  }

  /// The outcome of `c`, or nothing if none came within `timeout` (then
  /// `error` holds why).
  std::optional<step_outcome> ask_exec(const workflow::service_actor& svc,
                                       const service_call& c, caf::timespan timeout = 10s,
                                       caf::error* error = nullptr) {
    std::optional<step_outcome> out;
    caf::scoped_actor self{*sys_};
    self->request(svc, timeout, c)
        .receive([&](step_outcome& o) { out = std::move(o); },
                 [&](caf::error& e) {
                   if (error)
                     *error = e;
                 });
    return out;
  }

  std::optional<step_outcome> run(std::string command, workflow::duration left = 10s) {
    return ask_exec(svc_, make_call(std::move(command), wf_now() + left));
  }

  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  workflow::service_actor svc_;
  std::vector<workflow::service_actor> extra_;
  conclave::test::temp_dir dir_{"conclave-exec"};
};

TEST_F(builtin_exec, exit_0_is_success_with_the_output_as_message) {
  auto t = run("true");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->ok);
  EXPECT_EQ(t->message, "");
  auto e = run("echo hello");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->ok);
  EXPECT_EQ(e->message, "hello\n");
}

TEST_F(builtin_exec, exit_3_is_a_transient_failure_named_exit_3) {
  auto o = run("echo oops >&2; exit 3");
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->ok);
  EXPECT_EQ(o->kind, failure_kind::transient);
  EXPECT_EQ(o->error_kind, "exit_3");
  EXPECT_EQ(o->message, "oops\n");
}

TEST_F(builtin_exec, exit_100_is_a_permanent_failure) {
  auto o = run("echo no such order; exit 100");
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->ok);
  EXPECT_EQ(o->kind, failure_kind::permanent);
  EXPECT_EQ(o->error_kind, "exit_100");
  EXPECT_EQ(o->message, "no such order\n");
  auto tempfail = run("exit 75");
  ASSERT_TRUE(tempfail);
  EXPECT_EQ(tempfail->kind, failure_kind::transient);
  EXPECT_EQ(tempfail->error_kind, "exit_75");
}

TEST_F(builtin_exec, the_command_sees_key_attempt_and_compensation_in_its_environment) {
  auto c = make_call("echo $CONCLAVE_IDEMPOTENCY_KEY $CONCLAVE_ATTEMPT "
                     "$CONCLAVE_COMPENSATION",
                     wf_now() + 10s);
  auto o = ask_exec(svc_, c);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->message, "job-1/0 3 0\n");
  c.idempotency_key = "job-1/0/undo";
  c.attempt = workflow::attempt{12};
  c.compensation = true;
  o = ask_exec(svc_, c);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->message, "job-1/0/undo 12 1\n");
}

TEST_F(builtin_exec, the_command_sees_the_node_id_only_when_the_node_set_it) {
  // The fixture's service has no node id: the variable is not set at all
  // (the node's own environment is passed on, and the test runs without it).
  auto unset = run("echo ${CONCLAVE_NODE_ID-unset}");
  ASSERT_TRUE(unset);
  EXPECT_EQ(unset->message, "unset\n");
  agents::builtin_options o;
  o.node_id = 7;
  auto svc = agents::spawn_exec_service(*sys_, o);
  extra_.push_back(svc);
  auto set = ask_exec(svc, make_call("echo $CONCLAVE_NODE_ID", wf_now() + 10s));
  ASSERT_TRUE(set);
  EXPECT_EQ(set->message, "7\n");
}

TEST_F(builtin_exec, the_deadline_reaches_the_command_as_wall_clock_milliseconds) {
  auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  auto o = run("echo $CONCLAVE_DEADLINE_UNIX_MS", 10s);
  auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  ASSERT_TRUE(o);
  ASSERT_TRUE(o->ok);
  auto ms = std::stoll(o->message);
  EXPECT_GE(ms, before + 10'000 - 50);
  EXPECT_LE(ms, after + 10'000 + 50);
}

TEST_F(builtin_exec, only_the_bounded_tail_of_stdout_and_stderr_is_kept) {
  auto cmd = "i=1; while [ $i -le 3000 ]; do echo line $i; i=$((i+1)); done; "
             "echo last-on-stderr >&2";
  auto o = run(cmd);
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->ok);
  EXPECT_EQ(o->message.size(), 2048u);
  auto end = std::string{"line 2999\nline 3000\nlast-on-stderr\n"};
  ASSERT_GE(o->message.size(), end.size());
  EXPECT_EQ(o->message.substr(o->message.size() - end.size()), end);
  builtin_options small;
  small.output_tail_bytes = 16;
  auto svc = agents::spawn_exec_service(*sys_, small);
  extra_.push_back(svc);
  auto s = ask_exec(svc, make_call(cmd, wf_now() + 10s));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->message, "\nlast-on-stderr\n");
}

TEST_F(builtin_exec, a_command_killed_by_a_signal_is_a_transient_failure) {
  auto o = run("echo bye; kill -9 $$");
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->ok);
  EXPECT_EQ(o->kind, failure_kind::transient);
  EXPECT_EQ(o->error_kind, "signal_9");
  EXPECT_EQ(o->message, "bye\n");
}

TEST_F(builtin_exec, at_the_deadline_the_process_group_dies_and_nothing_is_answered) {
  auto pids = dir_ / "pids";
  // The shell and a child of it, both in the command's process group.
  auto cmd = "sleep 30 & echo $! > " + pids.string() + "; echo $$ >> " + pids.string()
             + "; wait";
  caf::error error;
  auto start = std::chrono::steady_clock::now();
  auto o = ask_exec(svc_, make_call(cmd, wf_now() + 200ms), 1200ms, &error);
  EXPECT_FALSE(o) << "answered " << (o ? o->error_kind : "");
  EXPECT_EQ(error, caf::sec::request_timeout);
  auto written = read_pids(pids);
  ASSERT_EQ(written.size(), 2u);
  EXPECT_TRUE(
      eventually([&] { return !process_alive(written[0]) && !process_alive(written[1]); },
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     1200ms - (std::chrono::steady_clock::now() - start))
                     + 100ms))
      << "the command's processes outlived its deadline by a second";
}

TEST_F(builtin_exec, a_call_past_its_deadline_starts_nothing) {
  auto marker = dir_ / "ran";
  caf::error error;
  auto o = ask_exec(svc_, make_call("touch " + marker.string(), wf_now() - 1ms), 300ms,
                    &error);
  EXPECT_FALSE(o);
  EXPECT_EQ(error, caf::sec::request_timeout);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(builtin_exec, a_service_that_exits_kills_the_commands_it_runs) {
  auto pids = dir_ / "pids";
  auto cmd = "sleep 30 & echo $! > " + pids.string() + "; echo $$ >> " + pids.string()
             + "; wait";
  caf::anon_send(svc_, make_call(cmd, wf_now() + 60s));
  ASSERT_TRUE(eventually([&] { return read_pids(pids).size() == 2; }, 5000ms));
  auto written = read_pids(pids);
  EXPECT_TRUE(process_alive(written[0]));
  EXPECT_TRUE(process_alive(written[1]));
  caf::anon_send_exit(svc_, caf::exit_reason::user_shutdown);
  EXPECT_TRUE(eventually(
      [&] { return !process_alive(written[0]) && !process_alive(written[1]); }, 1000ms));
}

TEST_F(builtin_exec, commands_run_concurrently_without_blocking_the_service) {
  // Four 300 ms commands answered well within their sum: one waiter each.
  caf::scoped_actor self{*sys_};
  auto start = std::chrono::steady_clock::now();
  using handle = decltype(self->request(svc_, caf::timespan{5s}, service_call{}));
  std::vector<handle> pending;
  for (int i = 0; i < 4; ++i)
    pending.push_back(
        self->request(svc_, 5s, make_call("sleep 0.3; echo done", wf_now() + 10s)));
  int answered = 0;
  for (auto& h : pending)
    h.receive([&](step_outcome& o) { answered += o.ok && o.message == "done\n"; },
              [](caf::error&) {});
  EXPECT_EQ(answered, 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1100ms);
}

} // namespace
