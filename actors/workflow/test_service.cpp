#include "actors/workflow/test_service.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <unordered_map>
#include <vector>

namespace conclave::workflow {

namespace {

using impl_actor =
    service_actor::extend<caf::reacts_to<workflow_atoms::retry_atom, uint64_t>>;

struct service_state {
  std::shared_ptr<test_service_state> shared;
  std::unordered_map<uint64_t,
                     std::pair<service_call, caf::typed_response_promise<step_outcome>>>
      slow;
  std::vector<caf::typed_response_promise<step_outcome>> hung;
  uint64_t next = 1;
  static inline const char* name = "conclave.test_service";
};

using impl = impl_actor::stateful_pointer<service_state>;

step_outcome take_effect(test_service_state& s, const service_call& c) {
  auto& n = s.effects[c.idempotency_key];
  if (!s.deduplicate || n == 0) {
    ++n;
    s.effect_order.push_back(c.idempotency_key);
  }
  return step_outcome{};
}

step_outcome failure(failure_kind k, const char* kind) {
  step_outcome o;
  o.ok = false;
  o.kind = k;
  o.error_kind = kind;
  o.message = "told to fail";
  return o;
}

impl_actor::behavior_type make_service(impl self, std::shared_ptr<test_service_state> s) {
  self->state.shared = std::move(s);
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  return {
      [self](service_call& c) -> caf::result<step_outcome> {
        auto& s = *self->state.shared;
        ++s.calls[c.idempotency_key];
        auto b = s.otherwise;
        if (!s.script.empty()) {
          b = s.script.front();
          s.script.pop_front();
        } else if (s.decide) {
          b = s.decide();
        }
        switch (b) {
        case test_behavior::ok:
          return take_effect(s, c);
        case test_behavior::transient:
          return failure(failure_kind::transient, "busy");
        case test_behavior::permanent:
          return failure(failure_kind::permanent, "rejected");
        case test_behavior::crash: {
          // No answer: the agent sees the service die (a transient failure).
          auto rp = self->make_response_promise<step_outcome>();
          self->quit(caf::exit_reason::user_shutdown);
          return rp;
        }
        case test_behavior::hang: {
          auto rp = self->make_response_promise<step_outcome>();
          self->state.hung.push_back(rp);
          return rp;
        }
        case test_behavior::slow: {
          auto rp = self->make_response_promise<step_outcome>();
          auto id = self->state.next++;
          self->state.slow.emplace(id, std::make_pair(c, rp));
          self->delayed_send(self,
                             std::chrono::duration_cast<caf::timespan>(s.slow_delay),
                             workflow_atoms::retry_atom_v, id);
          return rp;
        }
        }
        return failure(failure_kind::permanent, "unknown_behavior");
      },
      [self](workflow_atoms::retry_atom, uint64_t id) {
        auto i = self->state.slow.find(id);
        if (i == self->state.slow.end())
          return;
        auto [c, rp] = std::move(i->second);
        self->state.slow.erase(i);
        rp.deliver(take_effect(*self->state.shared, c));
      },
  };
}

} // namespace

service_actor spawn_test_service(caf::actor_system& sys,
                                 std::shared_ptr<test_service_state> state) {
  return sys.spawn(make_service, std::move(state));
}

} // namespace conclave::workflow
