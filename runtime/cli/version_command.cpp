#include "runtime/cli/commands.hpp"

#include <caf/config.hpp>

#include <iostream>

namespace conclave::cli {

void add_version_command(command_registry& reg) {
  reg.add("version", "Print the versions of conclave and CAF", [] {
    std::cout << "conclave " << CONCLAVE_VERSION << " (CAF " << CAF_MAJOR_VERSION << '.'
              << CAF_MINOR_VERSION << '.' << CAF_PATCH_VERSION << ")\n";
    return int{exit_ok};
  });
}

} // namespace conclave::cli
