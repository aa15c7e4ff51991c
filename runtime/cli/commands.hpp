// Every subcommand of `conclave`, registered by main.cpp. One line per command;
// each is implemented in its own file next to the code it drives.
#pragma once

#include "runtime/cli/command.hpp"

namespace conclave::cli {

/// "conclave 0.1.0 (CAF 0.17.6)"; also what `--version` prints.
std::string version_text();
void add_version_command(command_registry& reg);
void add_sim_command(command_registry& reg);
void add_node_command(command_registry& reg);
void add_cluster_command(command_registry& reg);
void add_store_command(command_registry& reg);
void add_kv_command(command_registry& reg);
/// lock, elect and leader (lock_command.cpp).
void add_lock_commands(command_registry& reg);
/// job submit|get|list|cancel|resubmit|explain|watch (job_command.cpp).
void add_job_command(command_registry& reg);

} // namespace conclave::cli
