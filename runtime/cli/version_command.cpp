#include "runtime/cli/commands.hpp"

#include <caf/config.hpp>

#include <iostream>

namespace conclave::cli {

std::string version_text() {
  return "conclave " + std::string{CONCLAVE_VERSION} + " (CAF "
         + std::to_string(CAF_MAJOR_VERSION) + '.' + std::to_string(CAF_MINOR_VERSION)
         + '.' + std::to_string(CAF_PATCH_VERSION) + ")";
}

void add_version_command(command_registry& reg) {
  reg.set_version(version_text());
  reg.add("version", "Print the versions of conclave and CAF (same as --version)", [] {
    std::cout << version_text() << '\n';
    return int{exit_ok};
  });
}

} // namespace conclave::cli
