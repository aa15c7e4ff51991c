#include "runtime/embed/agent_functions.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <exception>

namespace conclave::embed {

namespace wf = conclave::workflow;

step_call to_step_call(const wf::service_call& c) {
  step_call out;
  out.idempotency_key = c.idempotency_key;
  out.attempt = c.attempt.value;
  out.compensation = c.compensation;
  out.payload = c.payload;
  out.deadline = std::chrono::system_clock::time_point{
      std::chrono::duration_cast<std::chrono::system_clock::duration>(c.deadline)};
  return out;
}

wf::step_outcome to_outcome(const step_result& r) {
  wf::step_outcome o;
  o.ok = r.what == step_result::status::ok;
  o.kind = r.what == step_result::status::permanent ? wf::failure_kind::permanent
                                                    : wf::failure_kind::transient;
  o.error_kind = r.error_kind;
  o.message = r.message;
  return o;
}

wf::service_actor spawn_function_service(caf::actor_system& sys, agent_function fn) {
  return sys.spawn<caf::detached>(
      [fn = std::move(fn)]() -> wf::service_actor::behavior_type {
        return {
            [fn](const wf::service_call& c) -> wf::step_outcome {
              try {
                return to_outcome(fn(to_step_call(c)));
              } catch (const std::exception& e) {
                return to_outcome(step_result::transient_failure("exception", e.what()));
              } catch (...) {
                return to_outcome(step_result::transient_failure("exception"));
              }
            },
        };
      });
}

} // namespace conclave::embed
