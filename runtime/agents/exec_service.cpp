// The "exec" service (builtin_agents.hpp): one child process per call, one
// thread per running child that reads its output and reaps it, and the actor
// that owns both.
//
//   caller → service     service_call -> step_outcome (or nothing, at the deadline)
//   waiter thread → self (exec_done_atom, id, wait status, lost, output tail)
//   self → self          (exec_deadline_atom, id)  the call's deadline
//
// The waiter thread never touches the actor's state: it owns a reference to
// the child and a weak reference to the actor, and reports by message. The
// actor joins a waiter when its report arrives (the thread is then at its
// end), and on exit kills every running child's process group and joins the
// waiters, so no thread outlives the actor's state.
#include "runtime/agents/builtin_agents.hpp"
#include "runtime/agents/child_process.hpp"
#include "runtime/agents/outcomes.hpp"
#include "runtime/agents/service_time.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <sys/wait.h>

#include <chrono>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

namespace conclave::agents {

namespace {

using exec_done_atom = caf::atom_constant<caf::atom("ex_done")>;
using exec_deadline_atom = caf::atom_constant<caf::atom("ex_deadln")>;

using exec_actor = workflow::service_actor::extend<
    caf::reacts_to<exec_done_atom, uint64_t, int32_t, bool, std::string>,
    caf::reacts_to<exec_deadline_atom, uint64_t>>;

/// One running command.
struct exec_run {
  caf::typed_response_promise<workflow::step_outcome> rp;
  std::shared_ptr<child_process> child;
  std::thread waiter;
  /// Past its deadline: killed, and its outcome is never sent.
  bool abandoned = false;
};

/// Kills the run's process group and waits for its waiter thread. Quick: the
/// kill wakes the waiter, which then only reaps the killed child.
void stop_exec_run(exec_run& r) {
  r.child->kill();
  if (!r.waiter.joinable())
    return;
  // The last reference to the actor may be the waiter's own (the actor is
  // then destroyed on that thread): it cannot join itself, and it touches
  // nothing of the state after its report.
  if (r.waiter.get_id() == std::this_thread::get_id())
    r.waiter.detach();
  else
    r.waiter.join();
}

struct exec_state {
  builtin_options opts;
  std::unordered_map<uint64_t, exec_run> runs;
  uint64_t next_id = 1;
  static inline const char* name = "conclave.exec_service";

  exec_state() = default;
  exec_state(const exec_state&) = delete;
  exec_state& operator=(const exec_state&) = delete;
  ~exec_state() {
    for (auto& kv : runs)
      stop_exec_run(kv.second);
  }
};

using exec_impl = exec_actor::stateful_pointer<exec_state>;

/// The outcome of a command that ended with wait status `status`.
workflow::step_outcome exec_outcome(int status, bool lost, std::string tail) {
  using workflow::failure_kind;
  if (lost)
    return failure_outcome(failure_kind::transient, "wait_failed",
                           "the command's exit status could not be collected");
  if (WIFEXITED(status)) {
    auto code = WEXITSTATUS(status);
    if (code == 0) {
      workflow::step_outcome o;
      o.message = std::move(tail);
      return o;
    }
    auto kind = code == exec_permanent_exit_code ? failure_kind::permanent
                                                 : failure_kind::transient;
    return failure_outcome(kind, "exit_" + std::to_string(code), std::move(tail));
  }
  if (WIFSIGNALED(status))
    return failure_outcome(failure_kind::transient,
                           "signal_" + std::to_string(WTERMSIG(status)), std::move(tail));
  return failure_outcome(failure_kind::transient, "wait_failed", std::move(tail));
}

/// CONCLAVE_DEADLINE_UNIX_MS: the wall clock `left` from now.
int64_t deadline_unix_ms(workflow::duration left) {
  auto at = std::chrono::system_clock::now()
            + std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
  return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch())
      .count();
}

caf::result<workflow::step_outcome> start_exec(exec_impl self,
                                               const workflow::service_call& c) {
  auto& st = self->state;
  // A response promise takes over the reply, also when a value is returned
  // afterwards: one is made only where it is used.
  auto left = c.deadline - workflow_now(self, st.opts.clock_offset);
  // Too late to start: never answered, like a hung service.
  if (left <= workflow::duration::zero())
    return self->make_response_promise<workflow::step_outcome>();
  std::vector<std::string> added{
      "CONCLAVE_IDEMPOTENCY_KEY=" + c.idempotency_key,
      "CONCLAVE_ATTEMPT=" + std::to_string(c.attempt.value),
      std::string{"CONCLAVE_COMPENSATION="} + (c.compensation ? "1" : "0"),
      "CONCLAVE_DEADLINE_UNIX_MS=" + std::to_string(deadline_unix_ms(left)),
  };
  if (st.opts.node_id != 0)
    added.push_back("CONCLAVE_NODE_ID=" + std::to_string(st.opts.node_id));
  auto env = child_process::environment_with(added);
  std::string error;
  auto child = child_process::start(c.payload, env, error);
  if (!child)
    return failure_outcome(workflow::failure_kind::transient, "spawn_failed", error);
  auto id = st.next_id++;
  exec_run run;
  run.child = child;
  caf::weak_actor_ptr weak_self{self->ctrl()};
  auto tail_bytes = st.opts.output_tail_bytes;
  try {
    run.waiter = std::thread{[child, weak_self, id, tail_bytes] {
      auto r = child->wait(tail_bytes);
      if (auto strong = weak_self.lock())
        caf::anon_send(caf::actor_cast<exec_actor>(strong), exec_done_atom::value, id,
                       static_cast<int32_t>(r.status), r.lost, std::move(r.output_tail));
    }};
  } catch (const std::system_error& e) {
    child->kill(); // reaped when the last reference goes, right here
    return failure_outcome(workflow::failure_kind::transient, "spawn_failed",
                           std::string{"thread: "} + e.what());
  }
  run.rp = self->make_response_promise<workflow::step_outcome>();
  auto rp = run.rp;
  self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(left),
                     exec_deadline_atom::value, id);
  st.runs.emplace(id, std::move(run));
  return rp;
}

exec_actor::behavior_type make_exec(exec_impl self, builtin_options opts) {
  self->state.opts = opts;
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  return {
      [self](workflow::service_call& c) -> caf::result<workflow::step_outcome> {
        return start_exec(self, c);
      },
      [self](exec_done_atom, uint64_t id, int32_t status, bool lost, std::string& tail) {
        auto& runs = self->state.runs;
        auto i = runs.find(id);
        if (i == runs.end())
          return;
        auto run = std::move(i->second);
        runs.erase(i);
        if (run.waiter.joinable())
          run.waiter.join(); // it has reported: it is at its end
        if (!run.abandoned)
          run.rp.deliver(exec_outcome(status, lost, std::move(tail)));
      },
      [self](exec_deadline_atom, uint64_t id) {
        auto i = self->state.runs.find(id);
        if (i == self->state.runs.end() || i->second.abandoned)
          return;
        // The agent has given up: kill the group, answer nothing, and join
        // the waiter when it reports the reaped child.
        i->second.abandoned = true;
        i->second.child->kill();
      },
  };
}

} // namespace

workflow::service_actor spawn_exec_service(caf::actor_system& sys, builtin_options opts) {
  return sys.spawn(make_exec, opts);
}

} // namespace conclave::agents
