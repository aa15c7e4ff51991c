// The promised term on disk: save and load across reopen, a missing file is
// term zero, every damaged or unreadable file fails the open (never term
// zero), and a crash during save (a leftover temp file) keeps the old term.
#include "storage/file_term_file.hpp"

#include "storage/file_util.hpp"
#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

using conclave::replication::node_id;
using conclave::replication::term;
using conclave::storage::file_term_file;
using conclave::storage::open_term_file;
namespace files = conclave::store::files;
namespace fs = std::filesystem;

using conclave::test::code;

namespace {

void write(const fs::path& p, const std::string& bytes) {
  ASSERT_TRUE(files::write_file_synced(p, bytes, files::default_sync()));
}

class file_term_file_test : public testing::Test {
protected:
  conclave::test::temp_dir dir{"term-file"};
  fs::path where = dir.path() / "replica";
};

} // namespace

TEST_F(file_term_file_test, a_saved_term_is_loaded_after_reopen) {
  {
    auto f = open_term_file(where);
    ASSERT_TRUE(f) << f.error().message();
    EXPECT_EQ(f.value()->load(), term{}); // a new replica
    ASSERT_TRUE(f.value()->save(term{3, node_id{2}, 7}));
    EXPECT_EQ(f.value()->load(), (term{3, node_id{2}, 7}));
    ASSERT_TRUE(f.value()->save(term{4, node_id{1}, 9}));
  }
  auto f = open_term_file(where);
  ASSERT_TRUE(f);
  EXPECT_EQ(f.value()->load(), (term{4, node_id{1}, 9}));
  EXPECT_FALSE(fs::exists(where / "term.tmp"));
}

TEST_F(file_term_file_test, every_flipped_byte_and_every_cut_fails_the_open) {
  auto good = file_term_file::encode(term{5, node_id{3}, 11});
  ASSERT_EQ(file_term_file::decode(good).value(), (term{5, node_id{3}, 11}));
  fs::create_directories(where);
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x04);
    write(where / "term", bad);
    auto f = open_term_file(where);
    ASSERT_FALSE(f) << "byte " << i;
    EXPECT_EQ(code(f.error()), conclave::store::errc::corrupt_data);
    EXPECT_EQ(files::read_file(where / "term").value(), bad); // left for the operator
  }
  for (size_t n = 0; n < good.size(); ++n) {
    write(where / "term", good.substr(0, n));
    EXPECT_FALSE(open_term_file(where)) << "cut at " << n;
  }
  write(where / "term", good + "x");
  EXPECT_FALSE(open_term_file(where));
}

TEST_F(file_term_file_test, an_unreadable_term_file_is_an_error_not_term_zero) {
  // (The tests may run as root, for whom permissions read anyway: a directory
  // in the file's place cannot be read by anyone.)
  fs::create_directories(where / "term");
  auto f = open_term_file(where);
  ASSERT_FALSE(f);
  EXPECT_NE(code(f.error()), conclave::store::errc::corrupt_data); // the read error
}

TEST_F(file_term_file_test, a_crash_during_save_keeps_the_previous_term) {
  {
    auto f = open_term_file(where).value();
    ASSERT_TRUE(f->save(term{2, node_id{1}, 1}));
  }
  // The save of term 3 crashed before its rename: whole, or torn.
  for (auto leftover : {file_term_file::encode(term{3, node_id{1}, 1}),
                        file_term_file::encode(term{3, node_id{1}, 1}).substr(0, 13)}) {
    write(where / "term.tmp", leftover);
    auto f = open_term_file(where);
    ASSERT_TRUE(f);
    EXPECT_EQ(f.value()->load(), (term{2, node_id{1}, 1}));
    EXPECT_FALSE(fs::exists(where / "term.tmp"));
  }
  // The very first save crashed: nothing was ever promised.
  fs::remove(where / "term");
  write(where / "term.tmp", file_term_file::encode(term{1, node_id{1}, 1}));
  auto f = open_term_file(where);
  ASSERT_TRUE(f);
  EXPECT_EQ(f.value()->load(), term{});
}

TEST_F(file_term_file_test, a_failed_save_keeps_the_previous_term) {
  auto f = open_term_file(where).value();
  ASSERT_TRUE(f->save(term{2, node_id{1}, 1}));
  // The temp file's name taken by a directory: the write fails.
  fs::create_directories(where / "term.tmp");
  EXPECT_FALSE(f->save(term{3, node_id{1}, 1}));
  EXPECT_EQ(f->load(), (term{2, node_id{1}, 1}));
  fs::remove(where / "term.tmp");
  auto again = open_term_file(where);
  ASSERT_TRUE(again);
  EXPECT_EQ(again.value()->load(), (term{2, node_id{1}, 1}));
}
