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
  EXPECT_EQ(cli::env_name("--data-dir"), "CONCLAVE_DATA_DIR");
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
  ::setenv("CONCLAVE_NODES", "5", 1);
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
  ::unsetenv("CONCLAVE_NODES");
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
