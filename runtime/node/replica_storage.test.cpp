// The replica's storage as a node opens it: a lost term file beside a log or
// a checkpoint refuses the start (never read as term zero, which would let
// the replica vote or accept again in a term it already left); a new data
// dir, and one whose term file was lost before anything was logged, open.
#include "runtime/node/replica_storage.hpp"

#include "storage/file_term_file.hpp"
#include "tests/support/log_device_sync.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
namespace nd = conclave::node;
namespace rp = conclave::replication;
namespace st = conclave::store;

namespace {

st::log_record record_in_term(uint64_t l, uint64_t epoch) {
  st::log_record r;
  r.lsn = st::lsn{l};
  r.term = st::term{epoch};
  r.txn = st::txn_id{l};
  r.ops.push_back({st::op_kind::put, 0, "k" + std::to_string(l), "v"});
  return r;
}

/// Opens the storage, saves term (epoch 3, leader 2), then logs `records`
/// records and, with `checkpoint`, a checkpoint covering them; closes it.
void fill(const std::string& data_dir, uint64_t records, bool checkpoint) {
  auto s = nd::open_replica_storage(data_dir);
  ASSERT_TRUE(s) << s.error();
  ASSERT_TRUE(s.value().terms->save(rp::term{3, rp::node_id{2}, 1}));
  for (uint64_t l = 1; l <= records; ++l)
    ASSERT_TRUE(s.value().device->append(record_in_term(l, 3)));
  if (records > 0) {
    auto synced = conclave::test::sync_and_wait(*s.value().device);
    ASSERT_TRUE(synced);
    ASSERT_EQ(synced.value().value, records);
  }
  if (checkpoint)
    ASSERT_TRUE(s.value().device->checkpoint("image", st::lsn{records}));
}

} // namespace

TEST(replica_storage, a_new_data_dir_opens_at_term_zero) {
  conclave::test::temp_dir dir{"replica-storage"};
  auto s = nd::open_replica_storage(dir.path().string());
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), rp::term{});
  EXPECT_TRUE(s.value().durable);
}

TEST(replica_storage, the_saved_term_comes_back_with_the_log) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 5, false);
  auto s = nd::open_replica_storage(dir.path().string());
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), (rp::term{3, rp::node_id{2}, 1}));
}

TEST(replica_storage, a_lost_term_file_beside_a_log_refuses_the_start_and_keeps_the_log) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 5, false);
  auto replica = dir.path() / "replica";
  ASSERT_TRUE(fs::remove(replica / "term"));
  auto s = nd::open_replica_storage(dir.path().string());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("term file"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
  EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
  EXPECT_FALSE(fs::exists(replica / "term")); // nothing made up
  // The log is untouched: with the file back, all five records recover.
  std::ofstream{replica / "term", std::ios::binary}
      << conclave::storage::file_term_file::encode(rp::term{3, rp::node_id{2}, 1});
  auto again = nd::open_replica_storage(dir.path().string());
  ASSERT_TRUE(again) << again.error();
  auto rec = again.value().device->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec.value().records.size(), 5u);
}

TEST(replica_storage, a_lost_term_file_beside_a_checkpoint_refuses_the_start) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 3, true);
  ASSERT_TRUE(fs::remove(dir.path() / "replica" / "term"));
  auto s = nd::open_replica_storage(dir.path().string());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
}

TEST(replica_storage, a_term_file_lost_before_anything_was_logged_is_term_zero) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 0, false);
  ASSERT_TRUE(fs::remove(dir.path() / "replica" / "term"));
  auto s = nd::open_replica_storage(dir.path().string());
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), rp::term{});
}
