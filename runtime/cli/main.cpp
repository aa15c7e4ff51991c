// conclave: the command-line entry point. See command.hpp for the conventions.
#include "runtime/cli/commands.hpp"
#include "runtime/cli/stage_trace.hpp"

#include <cstring>
#include <iterator>

namespace {

using namespace conclave::cli;

/// Every command, by the names its function registers.
struct command_entry {
  const char* names[3];
  void (*add)(command_registry&);
};

const command_entry commands[] = {
    {{"sim"}, add_sim_command},         {{"node"}, add_node_command},
    {{"cluster"}, add_cluster_command}, {{"store"}, add_store_command},
    {{"kv"}, add_kv_command},           {{"lock", "elect", "leader"}, add_lock_commands},
    {{"job"}, add_job_command},
};

/// The entry of the command `name`; nullptr if it is not one.
const command_entry* entry_of(const char* name) {
  for (auto& c : commands)
    for (auto* n : c.names)
      if (n != nullptr && std::strcmp(n, name) == 0)
        return &c;
  return nullptr;
}

} // namespace

int main(int argc, char** argv) {
  stages().mark("main");
  command_registry reg{"conclave", "conclave: leader election, workflows and reliable "
                                   "collections on CAF"};
  add_version_command(reg);
  // A command named first needs only its own definitions: building every
  // command's flags costs a one-shot `conclave kv` about half a millisecond.
  // Anything else (help, --version, a typo, `reference`) gets all of them.
  if (auto* only = argc > 1 ? entry_of(argv[1]) : nullptr) {
    only->add(reg);
  } else {
    for (auto& c : commands)
      c.add(reg);
    reg.add_reference_command();
  }
  return reg.run(argc, argv);
}
