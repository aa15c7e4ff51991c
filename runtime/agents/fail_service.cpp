// The "fail" service (builtin_agents.hpp): answers the failure its payload
// names, at once.
#include "runtime/agents/builtin_agents.hpp"
#include "runtime/agents/outcomes.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace conclave::agents {

namespace {

/// "transient" | "permanent" [":" TEXT], empty = "transient".
workflow::step_outcome fail_outcome(const std::string& payload) {
  using workflow::failure_kind;
  auto colon = payload.find(':');
  auto word = payload.substr(0, colon);
  failure_kind kind;
  if (word == "transient" || payload.empty())
    kind = failure_kind::transient;
  else if (word == "permanent")
    kind = failure_kind::permanent;
  else
    return bad_payload("fail: the payload is not transient[:TEXT] or permanent[:TEXT]: '"
                       + payload + "'");
  auto text = colon == std::string::npos ? std::string{"failed as told ("} + word + ")"
                                         : payload.substr(colon + 1);
  return failure_outcome(kind, "fail", std::move(text));
}

workflow::service_actor::behavior_type make_fail(workflow::service_actor::pointer self) {
  // Unexpected messages are dropped, not printed (stdout may carry --json).
  self->set_default_handler(caf::drop);
  return {
      [](const workflow::service_call& c) { return fail_outcome(c.payload); },
  };
}

} // namespace

workflow::service_actor spawn_fail_service(caf::actor_system& sys) {
  return sys.spawn(make_fail);
}

} // namespace conclave::agents
