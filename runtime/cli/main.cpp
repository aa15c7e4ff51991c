// conclave: the command-line entry point. See command.hpp for the conventions.
#include "runtime/cli/commands.hpp"
#include "runtime/cli/stage_trace.hpp"

int main(int argc, char** argv) {
  using namespace conclave::cli;
  stages().mark("main");
  command_registry reg{"conclave", "conclave: leader election, workflows and reliable "
                                   "collections on CAF"};
  add_version_command(reg);
  add_sim_command(reg);
  add_node_command(reg);
  add_cluster_command(reg);
  add_store_command(reg);
  add_kv_command(reg);
  add_lock_commands(reg);
  add_job_command(reg);
  reg.add_reference_command();
  return reg.run(argc, argv);
}
