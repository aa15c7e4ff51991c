#include "runtime/cli/command.hpp"

#include <cctype>
#include <iostream>

namespace conclave::cli {

command_registry::command_registry(std::string name, std::string description)
    : app_(std::move(description), std::move(name)) {
  app_.require_subcommand(1);
  app_.fallthrough(false);
}

CLI::App* command_registry::add(const std::string& name, const std::string& description,
                                run_fn run) {
  auto* sub = app_.add_subcommand(name, description);
  runs_[sub] = std::move(run);
  return sub;
}

int command_registry::run(int argc, const char* const* argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app_.exit(e); // --help, --version
    // One line, naming the problem and where to look.
    std::string what = e.what();
    for (auto& c : what)
      if (c == '\n')
        c = ' ';
    std::cerr << app_.get_name() << ": error: " << what << " (see --help)\n";
    return exit_bad_input;
  }
  for (auto* sub : app_.get_subcommands()) {
    auto i = runs_.find(sub);
    if (i != runs_.end())
      return i->second();
  }
  std::cerr << app_.get_name() << ": error: no command given (see --help)\n";
  return exit_bad_input;
}

std::string env_name(std::string_view flag) {
  while (!flag.empty() && flag.front() == '-')
    flag.remove_prefix(1);
  std::string result = "CONCLAVE_";
  for (char c : flag)
    result +=
        c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

int bad_input(std::string_view what) {
  std::cerr << "conclave: error: " << what << '\n';
  return exit_bad_input;
}

} // namespace conclave::cli
