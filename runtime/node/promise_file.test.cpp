// The node's promise record on disk: written whole or not at all, read back
// exactly, and any damage reported, kept aside and answered with the longest
// lease (never taken for "nothing promised").
#include "runtime/node/promise_file.hpp"

#include "storage/posix_file_system.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace std::chrono_literals;
using conclave::node::file_promise_record;
namespace fs = std::filesystem;
namespace el = conclave::election;

namespace {

struct promise_file_test : testing::Test {
  fs::path dir = fs::temp_directory_path()
                 / ("conclave-promise-" + std::to_string(::getpid()) + "-"
                    + testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  std::shared_ptr<file_promise_record> open(std::string& problem) {
    problem.clear();
    return file_promise_record::open(dir, conclave::store::default_file_system(), 500ms,
                                     problem);
  }
  void write(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  fs::path file() const { return dir / file_promise_record::file_name; }
};

} // namespace

TEST_F(promise_file_test, no_file_is_nothing_promised_and_a_stored_value_is_read_back) {
  std::string problem;
  auto r = open(problem);
  EXPECT_TRUE(problem.empty());
  EXPECT_EQ(r->load(), 0ms);
  for (auto v : {el::duration{1}, el::duration{500ms}, el::duration{100ms},
                 el::duration{0}, el::duration{std::numeric_limits<int64_t>::max()}}) {
    ASSERT_TRUE(r->store(v));
    EXPECT_EQ(r->load(), v);
    EXPECT_EQ(open(problem)->load(), v);
    EXPECT_TRUE(problem.empty());
    EXPECT_EQ(fs::file_size(file()), 20u);
  }
}

TEST_F(promise_file_test, a_write_that_never_completed_leaves_the_old_value) {
  std::string problem;
  ASSERT_TRUE(open(problem)->store(300ms));
  // A crash before the rename: the temporary file holds the new value.
  write(dir / "lease-promise.tmp", file_promise_record::encode(500ms));
  auto r = open(problem);
  EXPECT_TRUE(problem.empty());
  EXPECT_EQ(r->load(), 300ms);
  EXPECT_FALSE(fs::exists(dir / "lease-promise.tmp"));
  // A torn temporary file is just as harmless.
  write(dir / "lease-promise.tmp", "CPR");
  EXPECT_EQ(open(problem)->load(), 300ms);
}

// Every flipped bit and every cut length of a valid file is reported, moved
// aside as it was, and read as the longest lease.
TEST_F(promise_file_test,
       every_flipped_bit_and_cut_is_reported_kept_and_read_as_the_longest) {
  auto good = file_promise_record::encode(300ms);
  ASSERT_EQ(good.size(), 20u);
  std::vector<std::string> damaged;
  for (size_t i = 0; i < good.size() * 8; ++i) {
    auto b = good;
    b[i / 8] = static_cast<char>(b[i / 8] ^ (1 << (i % 8)));
    damaged.push_back(b);
  }
  for (size_t n = 0; n < good.size(); ++n)
    damaged.push_back(good.substr(0, n));
  damaged.push_back(good + "x");
  for (auto& b : damaged) {
    EXPECT_FALSE(file_promise_record::decode(b));
    write(file(), b);
    std::string problem;
    auto r = open(problem);
    EXPECT_EQ(r->load(), 500ms);
    EXPECT_NE(problem.find("cannot be read"), std::string::npos);
    EXPECT_EQ(problem.find('\n'), std::string::npos); // one line
    EXPECT_FALSE(fs::exists(file()));
    EXPECT_EQ(read(dir / "lease-promise.damaged"), b); // kept as it was
    // The next write makes a good file again.
    ASSERT_TRUE(r->store(100ms));
    EXPECT_EQ(open(problem)->load(), 100ms);
    EXPECT_TRUE(problem.empty());
    fs::remove(file());
    fs::remove(dir / "lease-promise.damaged");
  }
}

// A second damaged file never replaces the copy kept of the first.
TEST_F(promise_file_test, each_damaged_file_is_kept_beside_the_earlier_ones) {
  std::vector<std::string> bad{"first", "second", "third"};
  for (auto& b : bad) {
    write(file(), b);
    std::string problem;
    EXPECT_EQ(open(problem)->load(), 500ms);
    EXPECT_NE(problem.find("moved aside"), std::string::npos) << problem;
  }
  EXPECT_EQ(read(dir / "lease-promise.damaged"), "first");
  EXPECT_EQ(read(dir / "lease-promise.damaged.1"), "second");
  EXPECT_EQ(read(dir / "lease-promise.damaged.2"), "third");
  EXPECT_FALSE(fs::exists(file()));
}

// Garbage of every size up to twice the file's, from a fixed seed.
TEST_F(promise_file_test, garbage_never_decodes) {
  uint64_t x = 88172645463325252ull;
  for (size_t n = 0; n <= 40; ++n) {
    for (int k = 0; k < 50; ++k) {
      std::string b;
      for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b.push_back(static_cast<char>(x));
      }
      if (n >= 4 && k % 2 == 0)
        b.replace(0, 4, "CPRM"); // past the magic
      EXPECT_FALSE(file_promise_record::decode(b)) << n;
    }
  }
}
