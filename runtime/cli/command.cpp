#include "runtime/cli/command.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <sstream>

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

/// `text` fit for one cell of a Markdown table.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else
      out += c == '\n' ? ' ' : c;
  }
  return out;
}

bool hidden(const CLI::App& app) {
  return app.get_group().empty();
}

bool hidden(const CLI::Option& opt) {
  return opt.get_group().empty() || opt.get_name() == "--help";
}

/// One section per command: its description, its arguments and flags, then
/// its subcommands, depth first.
void write_reference(std::ostream& out, CLI::App& app, const std::string& path) {
  out << "\n## `" << path << "`\n\n" << app.get_description() << "\n";
  std::vector<CLI::App*> subs;
  for (auto* sub : subcommands_of(app))
    if (!hidden(*sub))
      subs.push_back(sub);
  if (!subs.empty()) {
    out << "\nCommands:";
    for (auto* sub : subs)
      out << (sub == subs.front() ? " " : ", ") << '`' << sub->get_name() << '`';
    out << "\n";
  }
  std::vector<const CLI::Option*> args;
  std::vector<const CLI::Option*> flags;
  for (auto* opt : app.get_options())
    if (!hidden(*opt))
      (opt->nonpositional() ? flags : args).push_back(opt);
  if (!args.empty()) {
    out << "\n| argument | value | meaning |\n|---|---|---|\n";
    for (auto* a : args)
      out << "| `" << a->get_name() << "` | " << a->get_type_name()
          << (a->get_required() ? ", required" : "") << " | "
          << cell(a->get_description()) << " |\n";
  }
  if (!flags.empty()) {
    out << "\n| flag | value | default | environment | meaning "
           "|\n|---|---|---|---|---|\n";
    for (auto* f : flags) {
      std::string names;
      for (auto& n : f->get_snames())
        names += (names.empty() ? "`-" : ", `-") + n + "`";
      for (auto& n : f->get_lnames())
        names += (names.empty() ? "`--" : ", `--") + n + "`";
      auto value = f->get_type_name().empty() ? std::string{"flag"} : f->get_type_name();
      auto def = f->get_required() ? std::string{"required"} : f->get_default_str();
      auto env = f->get_envname();
      out << "| " << names << " | " << cell(value) << " | "
          << (def.empty() ? "" : "`" + cell(def) + "`") << " | "
          << (env.empty() ? "" : "`" + env + "`") << " | " << cell(f->get_description())
          << " |\n";
    }
  }
  for (auto* sub : subs)
    write_reference(out, *sub, path + " " + sub->get_name());
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

std::string command_registry::reference() {
  for (auto* sub : subcommands_of(app_))
    scope_environment(*sub, sub->get_name());
  std::ostringstream out;
  out << "# Command-line reference\n\n"
         "Every `"
      << app_.get_name()
      << "` command and flag. This page is generated "
         "from the definitions the\ncommand line is parsed with (`"
      << app_.get_name()
      << " reference > docs/reference/cli.md`);\na test fails when it and the binary "
         "differ. A flag can also be set by the\nenvironment variable shown; a flag "
         "on the command line wins. `--help` works on\nevery command. Exit status: 0 "
         "success, 1 failure or timeout, 2 bad input (one\nline on stderr), 3 `sim` "
         "found safety violations, 4 `node` could not bind its\naddress.\n";
  write_reference(out, app_, app_.get_name());
  return out.str();
}

void command_registry::add_reference_command() {
  auto* sub =
      add("reference", "Print every command and flag as Markdown (docs/reference/cli.md)",
          [this] {
            std::cout << reference();
            return std::cout.flush() ? int{exit_ok} : int{exit_failure};
          });
  sub->group("");
}

bool command_registry::parses(int argc, const char* const* argv) {
  for (auto* sub : subcommands_of(app_))
    scope_environment(*sub, sub->get_name());
  try {
    app_.parse(argc, argv);
    return true;
  } catch (const CLI::Error&) {
    return false;
  }
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
