#include "actors/workflow/agent.hpp"

#include "actors/workflow/host_time.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <random>
#include <unordered_map>

namespace conclave::workflow {

namespace {

/// One dispatch in progress.
struct call {
  dispatch d;
  caf::typed_response_promise<step_outcome> rp;
  uint32_t tries = 0;
};

struct agent_state {
  agent_options opts;
  std::mt19937_64 rng;
  std::unordered_map<uint64_t, call> calls;
  uint64_t next_token = 1;
  workflow_probe* probe = &null_workflow_probe();
  static inline const char* name = "conclave.agent";
};

using agent_impl = agent_actor::stateful_pointer<agent_state>;

timestamp now_of(agent_impl self) {
  return host_now(self->state.opts.clock, self, self->state.opts.clock_offset);
}

service_call make_call(const call& c) {
  service_call sc;
  sc.idempotency_key = c.d.idempotency_key;
  sc.attempt = c.d.attempt;
  sc.compensation = c.d.compensation;
  sc.payload = c.d.payload;
  sc.deadline = c.d.deadline;
  return sc;
}

void try_once(agent_impl self, uint64_t token);

/// Handles the result of one try.
void on_result(agent_impl self, uint64_t token, step_outcome o) {
  auto& st = self->state;
  auto i = st.calls.find(token);
  if (i == st.calls.end())
    return; // given up already
  auto& c = i->second;
  auto now = now_of(self);
  if (now >= c.d.deadline) {
    st.probe->deadline_expired();
    st.calls.erase(i); // too late: reply nothing
    return;
  }
  if (o.ok) {
    c.rp.deliver(std::move(o));
    st.calls.erase(i);
    return;
  }
  std::uniform_real_distribution<double> u{0.0, 1.0};
  auto next =
      next_retry(c.d.retry, c.tries, o.kind, o.error_kind, now, c.d.deadline, u(st.rng));
  using why = retry_decision::why;
  switch (next.reason) {
  case why::retry:
    st.probe->agent_retry();
    send_later(self, st.opts.clock, next.delay, workflow_atoms::retry_atom_v, token);
    return;
  case why::deadline:
    st.probe->deadline_expired();
    st.calls.erase(i); // reply nothing
    return;
  case why::non_retryable_kind:
    o.kind = failure_kind::permanent;
    [[fallthrough]];
  case why::permanent:
  case why::attempts_exhausted:
    c.rp.deliver(std::move(o));
    st.calls.erase(i);
    return;
  }
}

void try_once(agent_impl self, uint64_t token) {
  auto& st = self->state;
  auto i = st.calls.find(token);
  if (i == st.calls.end())
    return;
  auto& c = i->second;
  ++c.tries;
  auto sc = make_call(c);
  if (st.opts.function) {
    on_result(self, token, st.opts.function(sc));
    return;
  }
  auto left = c.d.deadline - now_of(self);
  if (left <= timestamp::zero()) {
    on_result(self, token, step_outcome{});
    return;
  }
  self->request(st.opts.service, std::chrono::duration_cast<caf::timespan>(left), sc)
      .then([self, token](step_outcome& o) { on_result(self, token, std::move(o)); },
            [self, token](caf::error&) {
              // Unreachable service or no answer in time: a transient failure
              // (past the deadline on_result gives up silently).
              step_outcome o;
              o.ok = false;
              o.kind = failure_kind::transient;
              o.error_kind = "service_unavailable";
              on_result(self, token, std::move(o));
            });
}

agent_actor::behavior_type make_agent(agent_impl self, agent_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  st.rng.seed(st.opts.seed);
  if (st.opts.probe)
    st.probe = st.opts.probe.get();
  return {
      [self](dispatch& d) -> caf::result<step_outcome> {
        auto& st = self->state;
        auto token = st.next_token++;
        auto rp = self->make_response_promise<step_outcome>();
        st.calls.emplace(token, call{std::move(d), rp, 0});
        try_once(self, token);
        return rp;
      },
      [self](workflow_atoms::retry_atom, uint64_t token) { try_once(self, token); },
  };
}

} // namespace

agent_actor spawn_agent(caf::actor_system& sys, agent_options opts) {
  return sys.spawn(make_agent, std::move(opts));
}

} // namespace conclave::workflow
