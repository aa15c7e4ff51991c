// The `conclave` command line: one binary, one subcommand per job. Every
// subcommand registers itself through a command_registry (see main.cpp):
//
//   void add_sim_command(cli::command_registry& reg) {
//     auto* sub = reg.add("sim", "Simulate elections", [opts] { return run_sim(*opts);
//     }); cli::option(sub, "--nodes", opts->nodes, "number of candidates");
//   }
//
// Conventions (docs/reference/cli.md, docs/reference/configuration.md):
// - `--help` everywhere; `--name value` and `--name=value` both work.
// - A flag can also come from CONCLAVE_<COMMAND>_<FLAG> (upper case, '-' → '_'):
//   `node --data-dir` ← CONCLAVE_NODE_DATA_DIR, `cluster up --dir` ←
//   CONCLAVE_CLUSTER_DIR. Variables are scoped by command so that one exported for
//   one command never feeds another (a CONCLAVE_DIR meant for `cluster` must not
//   point `store` at a cluster directory). The registry applies the scope to
//   every option that has an environment name when it runs; a flag on the
//   command line wins over the environment (CLI11's order).
// - `conclave --version` prints the version; an unknown command is bad input,
//   answered with the list of commands.
// - Exit status: 0 success, 1 failure or timeout, 2 bad input (one line on stderr
//   naming the problem), 3 `sim` found safety violations, 4 `node` could not
//   bind an address in use (node::exit_address_in_use). Commands that check
//   something (`cluster status`) document their own meaning of 1.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <mutex>
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

  /// Parses argv as run() does (the same environment variables included),
  /// without running or printing anything: false where run() would answer
  /// with help, the version or an error.
  bool parses(int argc, const char* const* argv);

  CLI::App& app() { return app_; }

  /// Enables `--version`, printing `text`.
  void set_version(const std::string& text);

  /// Every command and flag, as one Markdown page (docs/reference/cli.md),
  /// made from the same definitions that parse argv: names, value types,
  /// defaults, environment variables, descriptions.
  std::string reference();

  /// Adds the hidden command `reference`, which prints reference().
  void add_reference_command();

private:
  CLI::App app_;
  std::map<const CLI::App*, run_fn> runs_;
};

/// The environment variable that backs a flag of `command`: ("node",
/// "--data-dir") → CONCLAVE_NODE_DATA_DIR. Without a command: CONCLAVE_DATA_DIR,
/// which the registry then scopes to the command the option belongs to.
std::string env_name(std::string_view flag, std::string_view command = {});

/// Adds an option that can also be set with its CONCLAVE_<COMMAND>_ variable.
template <class T>
CLI::Option* option(CLI::App* sub, const std::string& flag, T& value,
                    const std::string& description) {
  return sub->add_option(flag, value, description)->envname(env_name(flag));
}

/// Prints "conclave: error: <what>" on stderr and returns exit_bad_input.
int bad_input(std::string_view what);

/// `s` in single quotes for a POSIX shell (replay commands).
std::string shell_quote(const std::string& s);

/// What a replication client's last unsettled attempt ran into
/// (client_options::on_problem, written on its actor's thread): the client
/// commands add it to the line they print when a request fails. One per
/// process (a process runs one command).
class last_problem {
public:
  void set(const std::string& t) {
    std::lock_guard<std::mutex> guard{mtx_};
    text_ = t;
  }
  std::string get() {
    std::lock_guard<std::mutex> guard{mtx_};
    return text_;
  }

private:
  std::mutex mtx_;
  std::string text_;
};

inline last_problem& client_problem() {
  static last_problem p;
  return p;
}

} // namespace conclave::cli
