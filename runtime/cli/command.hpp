// The `conclave` command line: one binary, one subcommand per job. Every
// subcommand registers itself through a command_registry (see main.cpp):
//
//   void add_sim_command(cli::command_registry& reg) {
//     auto* sub = reg.add("sim", "Simulate elections", [opts] { return run_sim(*opts);
//     }); cli::option(sub, "--nodes", opts->nodes, "number of candidates");
//   }
//
// Conventions (docs/ and ../shared/DESIGN.md, "User-facing contract"):
// - `--help` everywhere; `--name value` and `--name=value` both work.
// - A flag can also come from CONCLAVE_<FLAG> (upper case, '-' → '_'); a flag on
//   the command line wins over the environment (CLI11's order).
// - Exit status: 0 success, 1 failure or timeout, 2 bad input (one line on stderr
//   naming the problem), 3 `sim` found safety violations.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace conclave::cli {

enum exit_status : int {
  exit_ok = 0,
  exit_failure = 1,
  exit_bad_input = 2,
  exit_safety_violation = 3,
};

/// A subcommand's body: runs after a successful parse, returns the exit status.
using run_fn = std::function<int()>;

class command_registry {
public:
  command_registry(std::string name, std::string description);

  /// Adds a subcommand; `run` is called if the user selects it.
  CLI::App* add(const std::string& name, const std::string& description, run_fn run);

  /// Parses argv and runs the selected subcommand. Bad input → one line on
  /// stderr and exit_bad_input; --help → help on stdout and exit_ok.
  int run(int argc, const char* const* argv);

  CLI::App& app() { return app_; }

private:
  CLI::App app_;
  std::map<const CLI::App*, run_fn> runs_;
};

/// The environment variable that backs a flag: "--data-dir" → CONCLAVE_DATA_DIR.
std::string env_name(std::string_view flag);

/// Adds an option that can also be set with its CONCLAVE_ environment variable.
template <class T>
CLI::Option* option(CLI::App* sub, const std::string& flag, T& value,
                    const std::string& description) {
  return sub->add_option(flag, value, description)->envname(env_name(flag));
}

/// Prints "conclave: error: <what>" on stderr and returns exit_bad_input.
int bad_input(std::string_view what);

} // namespace conclave::cli
