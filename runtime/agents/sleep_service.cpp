// The "sleep" service (builtin_agents.hpp): answers success after the
// payload's milliseconds, from a CAF timer.
//
//   caller → service  service_call -> step_outcome (or nothing: past the deadline)
//   self → self       (sleep_wake_atom, id)  a sleep is over
#include "runtime/agents/builtin_agents.hpp"
#include "runtime/agents/outcomes.hpp"
#include "runtime/agents/service_time.hpp"

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <charconv>
#include <chrono>
#include <optional>
#include <unordered_map>

namespace conclave::agents {

namespace {

using sleep_wake_atom = caf::atom_constant<caf::atom("sl_wake")>;

using sleep_actor =
    workflow::service_actor::extend<caf::reacts_to<sleep_wake_atom, uint64_t>>;

struct sleep_state {
  builtin_options opts;
  std::unordered_map<uint64_t, caf::typed_response_promise<workflow::step_outcome>>
      sleeping;
  uint64_t next_id = 1;
  static inline const char* name = "conclave.sleep_service";
};

using sleep_impl = sleep_actor::stateful_pointer<sleep_state>;

/// Milliseconds in decimal, digits only; empty is 0.
std::optional<uint64_t> parse_millis(const std::string& s) {
  uint64_t ms = 0;
  if (s.empty())
    return ms;
  auto end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, ms);
  if (ec != std::errc{} || p != end || s.front() < '0' || s.front() > '9')
    return std::nullopt;
  return ms;
}

caf::result<workflow::step_outcome> start_sleep(sleep_impl self,
                                                const workflow::service_call& c) {
  auto ms = parse_millis(c.payload);
  if (!ms)
    return bad_payload("sleep: the payload is not a number of milliseconds: '" + c.payload
                       + "'");
  // A response promise takes over the reply, also when a value is returned
  // afterwards: one is made only where it is used.
  auto left = c.deadline - workflow_now(self, self->state.opts.clock_offset);
  // Ends after the deadline (now + ms > deadline, without overflow for huge
  // payloads): never answered, like a hung service.
  if (left < workflow::duration::zero()
      || *ms > static_cast<uint64_t>(
             std::chrono::duration_cast<std::chrono::milliseconds>(left).count()))
    return self->make_response_promise<workflow::step_outcome>();
  if (*ms == 0)
    return workflow::step_outcome{};
  auto rp = self->make_response_promise<workflow::step_outcome>();
  auto id = self->state.next_id++;
  self->state.sleeping.emplace(id, rp);
  self->delayed_send(self, std::chrono::milliseconds{*ms}, sleep_wake_atom::value, id);
  return rp;
}

sleep_actor::behavior_type make_sleep(sleep_impl self, builtin_options opts) {
  self->state.opts = opts;
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  return {
      [self](workflow::service_call& c) -> caf::result<workflow::step_outcome> {
        return start_sleep(self, c);
      },
      [self](sleep_wake_atom, uint64_t id) {
        auto i = self->state.sleeping.find(id);
        if (i == self->state.sleeping.end())
          return;
        i->second.deliver(workflow::step_outcome{});
        self->state.sleeping.erase(i);
      },
  };
}

} // namespace

workflow::service_actor spawn_sleep_service(caf::actor_system& sys,
                                            builtin_options opts) {
  return sys.spawn(make_sleep, opts);
}

} // namespace conclave::agents
