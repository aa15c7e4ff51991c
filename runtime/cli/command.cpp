#include "runtime/cli/command.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>

namespace conclave::cli {

namespace {

std::vector<CLI::App*> subcommands_of(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

std::string upper_snake(std::string_view text) {
  std::string result;
  for (char c : text)
    result +=
        c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

/// Rewrites every CONCLAVE_X environment name under `app` to CONCLAVE_CMD_X.
void scope_environment(CLI::App& app, const std::string& command) {
  auto prefix = "CONCLAVE_" + upper_snake(command) + "_";
  for (auto* opt : app.get_options()) {
    auto name = opt->get_envname();
    if (name.rfind("CONCLAVE_", 0) == 0 && name.rfind(prefix, 0) != 0)
      opt->envname(prefix + name.substr(9));
  }
  for (auto* sub : subcommands_of(app))
    scope_environment(*sub, command);
}

std::string names_of(CLI::App& app) {
  std::string names;
  for (auto* sub : subcommands_of(app))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

/// The first word of argv that is not an option: the command a user meant.
/// Options before it are the registry's own (--help, --version), which take no
/// value, so this is exact at the top level.
/// The subcommand of `app` called `name`, or nullptr.
CLI::App* find_subcommand(CLI::App& app, std::string_view name) {
  for (auto* sub : subcommands_of(app))
    if (sub->check_name(std::string{name}))
      return sub;
  return nullptr;
}

const char* first_word(int argc, const char* const* argv, int from) {
  for (int i = from; i < argc; ++i)
    if (argv[i][0] != '-')
      return argv[i];
  return nullptr;
}

} // namespace

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

void command_registry::set_version(const std::string& text) {
  app_.set_version_flag("--version", text, "print the version and exit");
}

int command_registry::run(int argc, const char* const* argv) {
  for (auto* sub : subcommands_of(app_))
    scope_environment(*sub, sub->get_name());
  // "conclave foo" / "conclave cluster foo": name the word and list the choices
  // (CLI11 would only say that a subcommand is required).
  if (auto* word = first_word(argc, argv, 1)) {
    auto* cmd = find_subcommand(app_, word);
    if (cmd == nullptr) {
      std::cerr << app_.get_name() << ": error: unknown command '" << word
                << "'; commands: " << names_of(app_) << " (see --help)\n";
      return exit_bad_input;
    }
    auto at = std::find_if(argv + 1, argv + argc,
                           [&](const char* a) { return std::string_view{a} == word; });
    if (!subcommands_of(*cmd).empty() && at + 1 < argv + argc && (*(at + 1))[0] != '-'
        && find_subcommand(*cmd, *(at + 1)) == nullptr) {
      std::cerr << app_.get_name() << ": error: unknown command '" << word << ' '
                << *(at + 1) << "'; " << word << " commands: " << names_of(*cmd)
                << " (see --help)\n";
      return exit_bad_input;
    }
  }
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
  std::cerr << app_.get_name()
            << ": error: no command given; commands: " << names_of(app_)
            << " (see --help)\n";
  return exit_bad_input;
}

std::string env_name(std::string_view flag, std::string_view command) {
  while (!flag.empty() && flag.front() == '-')
    flag.remove_prefix(1);
  std::string result = "CONCLAVE_";
  if (!command.empty())
    result += upper_snake(command) + "_";
  return result + upper_snake(flag);
}

int bad_input(std::string_view what) {
  std::cerr << "conclave: error: " << what << '\n';
  return exit_bad_input;
}

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s)
    r += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return r + "'";
}

} // namespace conclave::cli
