#include "runtime/cli/command.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace cli = conclave::cli;

namespace {

int run(cli::command_registry& reg, std::vector<const char*> args) {
  args.insert(args.begin(), "conclave");
  return reg.run(static_cast<int>(args.size()), args.data());
}

} // namespace

TEST(cli, env_name_follows_the_conclave_prefix_convention) {
  EXPECT_EQ(cli::env_name("--data-dir", "node"), "CONCLAVE_NODE_DATA_DIR");
  EXPECT_EQ(cli::env_name("--nodes"), "CONCLAVE_NODES");
}

TEST(cli, unknown_flags_are_bad_input) {
  cli::command_registry reg{"conclave", "test"};
  int nodes = 0;
  auto* sub = reg.add("x", "x", [&] { return 0; });
  cli::option(sub, "--nodes", nodes, "n");
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(reg, {"x", "--bogus", "1"}), cli::exit_bad_input);
  auto err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("--bogus"), std::string::npos);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

TEST(cli, a_bad_number_is_bad_input) {
  cli::command_registry reg{"conclave", "test"};
  int nodes = 0;
  auto* sub = reg.add("x", "x", [&] { return 0; });
  cli::option(sub, "--nodes", nodes, "n");
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(reg, {"x", "--nodes", "many"}), cli::exit_bad_input);
  testing::internal::GetCapturedStderr();
}

TEST(cli, flag_beats_environment_which_beats_default) {
  cli::command_registry reg{"conclave", "test"};
  int nodes = 7;
  int seen = 0;
  auto* sub = reg.add("x", "x", [&] {
    seen = nodes;
    return 0;
  });
  cli::option(sub, "--nodes", nodes, "n");
  ::setenv("CONCLAVE_X_NODES", "5", 1);
  EXPECT_EQ(run(reg, {"x"}), 0);
  EXPECT_EQ(seen, 5);
  cli::command_registry reg2{"conclave", "test"};
  auto* sub2 = reg2.add("x", "x", [&] {
    seen = nodes;
    return 0;
  });
  cli::option(sub2, "--nodes", nodes, "n");
  EXPECT_EQ(run(reg2, {"x", "--nodes", "9"}), 0);
  EXPECT_EQ(seen, 9);
  ::unsetenv("CONCLAVE_X_NODES");
}

TEST(cli, environment_variables_are_scoped_by_command) {
  cli::command_registry reg{"conclave", "test"};
  std::string a_dir, b_dir;
  bool b_json = false;
  auto* a = reg.add("cluster", "a", [] { return 0; });
  auto* a_up = a->add_subcommand("up", "up");
  cli::option(a_up, "--dir", a_dir, "d");
  auto* b = reg.add("store", "b", [] { return 0; });
  cli::option(b, "--dir", b_dir, "d");
  b->add_flag("--json", b_json, "j")->envname(cli::env_name("--json"));
  ::setenv("CONCLAVE_CLUSTER_DIR", "/c", 1);
  ::setenv("CONCLAVE_DIR", "/shared", 1);
  ::setenv("CONCLAVE_STORE_JSON", "1", 1);
  EXPECT_EQ(run(reg, {"cluster", "up"}), 0);
  EXPECT_EQ(run(reg, {"store"}), 0);
  ::unsetenv("CONCLAVE_CLUSTER_DIR");
  ::unsetenv("CONCLAVE_DIR");
  ::unsetenv("CONCLAVE_STORE_JSON");
  EXPECT_EQ(a_dir, "/c");
  EXPECT_EQ(b_dir, ""); // neither CONCLAVE_DIR nor the cluster's variable
  EXPECT_TRUE(b_json);
}

TEST(cli, an_unknown_command_is_named_with_the_list_of_commands) {
  cli::command_registry reg{"conclave", "test"};
  reg.add("sim", "s", [] { return 0; });
  auto* cl = reg.add("cluster", "c", [] { return 0; });
  cl->add_subcommand("up", "u");
  cl->add_subcommand("down", "d");
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(reg, {"foo"}), cli::exit_bad_input);
  auto err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unknown command 'foo'; commands: sim, cluster"), std::string::npos)
      << err;
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(reg, {"cluster", "sideways"}), cli::exit_bad_input);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("unknown command 'cluster sideways'; cluster commands: up, down"),
            std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
}

TEST(cli, version_prints_the_version_and_succeeds) {
  cli::command_registry reg{"conclave", "test"};
  reg.add("sim", "s", [] { return 1; });
  reg.set_version("conclave 9.9.9");
  testing::internal::CaptureStdout();
  EXPECT_EQ(run(reg, {"--version"}), cli::exit_ok);
  EXPECT_NE(testing::internal::GetCapturedStdout().find("conclave 9.9.9"),
            std::string::npos);
}

TEST(cli, the_selected_command_decides_the_exit_status) {
  cli::command_registry reg{"conclave", "test"};
  reg.add("fail", "f", [] { return int{cli::exit_failure}; });
  reg.add("ok", "o", [] { return int{cli::exit_ok}; });
  EXPECT_EQ(run(reg, {"fail"}), cli::exit_failure);
}

TEST(cli, no_command_is_bad_input) {
  cli::command_registry reg{"conclave", "test"};
  reg.add("ok", "o", [] { return 0; });
  testing::internal::CaptureStderr();
  EXPECT_EQ(run(reg, {}), cli::exit_bad_input);
  testing::internal::GetCapturedStderr();
}

TEST(cli, the_reference_lists_every_visible_command_and_flag_with_its_environment) {
  cli::command_registry reg{"conclave", "test"};
  int nodes = 3;
  std::string dir, alias;
  bool json = false;
  auto* a = reg.add("cluster", "Start clusters", [] { return 0; });
  auto* up = a->add_subcommand("up", "Start one");
  cli::option(up, "--nodes", nodes, "how many | at most 64")->capture_default_str();
  cli::option(up, "--dir", dir, "where")->required();
  up->add_option("--old-dir", alias, "hidden alias")->group("");
  up->add_flag("--json", json, "one JSON object");
  up->add_option("NAME", dir, "a positional");
  reg.add_reference_command();
  auto page = reg.reference();
  EXPECT_NE(page.find("## `conclave cluster up`\n\nStart one"), std::string::npos)
      << page;
  EXPECT_NE(page.find("| `--nodes` | INT | `3` | `CONCLAVE_CLUSTER_NODES` | how many \\| "
                      "at most 64 |"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("| `--dir` | TEXT | `required` | `CONCLAVE_CLUSTER_DIR` |"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("| `--json` | flag |"), std::string::npos) << page;
  EXPECT_NE(page.find("| `NAME` | TEXT | a positional |"), std::string::npos) << page;
  EXPECT_NE(page.find("Commands: `cluster`"), std::string::npos) << page;
  // Hidden: the alias, --help and the reference command itself.
  EXPECT_EQ(page.find("--old-dir"), std::string::npos) << page;
  EXPECT_EQ(page.find("| `--help`"), std::string::npos) << page;
  EXPECT_EQ(page.find("`conclave reference`"), std::string::npos) << page;
}
