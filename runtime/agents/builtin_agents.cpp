#include "runtime/agents/builtin_agents.hpp"

namespace conclave::agents {

std::map<std::string, workflow::service_actor>
spawn_builtin_services(caf::actor_system& sys, builtin_options opts) {
  return {
      {"exec", spawn_exec_service(sys, opts)},
      {"sleep", spawn_sleep_service(sys, opts)},
      {"fail", spawn_fail_service(sys)},
  };
}

} // namespace conclave::agents
