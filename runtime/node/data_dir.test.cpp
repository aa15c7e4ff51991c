#include "runtime/node/data_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace conclave::node;
namespace fs = std::filesystem;

namespace {

struct data_dir_test : testing::Test {
  fs::path dir = fs::temp_directory_path()
                 / ("conclave-data-dir-" + std::to_string(::getpid()) + "-"
                    + testing::UnitTest::GetInstance()->current_test_info()->name());
  void TearDown() override { fs::remove_all(dir); }
};

} // namespace

TEST_F(data_dir_test, first_start_records_the_owner_and_later_starts_match_it) {
  auto first = claim_data_dir(dir.string(), "blue", 3);
  EXPECT_EQ(first.problem, data_dir_problem::none);
  EXPECT_TRUE(first.fresh);
  EXPECT_TRUE(fs::exists(dir / "identity.json"));
  auto again = claim_data_dir(dir.string(), "blue", 3);
  EXPECT_EQ(again.problem, data_dir_problem::none);
  EXPECT_FALSE(again.fresh);
}

TEST_F(data_dir_test, another_member_id_or_cluster_is_refused) {
  ASSERT_EQ(claim_data_dir(dir.string(), "blue", 3).problem, data_dir_problem::none);
  auto other_id = claim_data_dir(dir.string(), "blue", 4);
  EXPECT_EQ(other_id.problem, data_dir_problem::other_owner);
  EXPECT_NE(other_id.message.find("node 3 of cluster 'blue'"), std::string::npos);
  EXPECT_EQ(other_id.message.find('\n'), std::string::npos); // one line
  EXPECT_EQ(claim_data_dir(dir.string(), "green", 3).problem,
            data_dir_problem::other_owner);
  // Refusing changed nothing: the owner still starts.
  EXPECT_EQ(claim_data_dir(dir.string(), "blue", 3).problem, data_dir_problem::none);
}

TEST_F(data_dir_test, a_corrupt_identity_file_is_reported_and_kept) {
  fs::create_directories(dir);
  {
    std::ofstream out{dir / "identity.json"};
    out << "{\"cluster\": \"blue\", \"id\": ";
  }
  auto r = claim_data_dir(dir.string(), "blue", 3);
  EXPECT_EQ(r.problem, data_dir_problem::corrupt);
  EXPECT_EQ(fs::file_size(dir / "identity.json"), 26u); // not rewritten
}
