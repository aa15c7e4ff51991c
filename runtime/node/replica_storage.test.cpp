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
/// With `sync_each`, every record is its own synced write (so that damage in
/// an early one is followed by later writes: corruption, never a torn tail).
void fill(const std::string& data_dir, uint64_t records, bool checkpoint,
          bool sync_each = false) {
  auto s = nd::open_replica_storage(data_dir, 3);
  ASSERT_TRUE(s) << s.error();
  ASSERT_TRUE(s.value().terms->save(rp::term{3, rp::node_id{2}, 1}));
  for (uint64_t l = 1; l <= records; ++l) {
    ASSERT_TRUE(s.value().device->append(record_in_term(l, 3)));
    if (sync_each)
      ASSERT_TRUE(conclave::test::sync_and_wait(*s.value().device));
  }
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
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), rp::term{});
  EXPECT_TRUE(s.value().durable);
}

TEST(replica_storage, the_saved_term_comes_back_with_the_log) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 5, false);
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), (rp::term{3, rp::node_id{2}, 1}));
}

TEST(replica_storage, a_lost_term_file_beside_a_log_refuses_the_start_and_keeps_the_log) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 5, false);
  auto replica = dir.path() / "replica";
  ASSERT_TRUE(fs::remove(replica / "term"));
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("term file"), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
  EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
  EXPECT_FALSE(fs::exists(replica / "term")); // nothing made up
  // The log is untouched: with the file back, all five records recover.
  std::ofstream{replica / "term", std::ios::binary}
      << conclave::storage::file_term_file::encode(rp::term{3, rp::node_id{2}, 1});
  auto again = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(again) << again.error();
  auto rec = again.value().device->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec.value().records.size(), 5u);
}

TEST(replica_storage, a_lost_term_file_beside_a_checkpoint_refuses_the_start) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 3, true);
  ASSERT_TRUE(fs::remove(dir.path() / "replica" / "term"));
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("missing"), std::string::npos) << s.error();
}

TEST(replica_storage, a_term_file_lost_before_anything_was_logged_is_term_zero) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 0, false);
  ASSERT_TRUE(fs::remove(dir.path() / "replica" / "term"));
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s.value().terms->load(), rp::term{});
}

namespace {

/// Flips one byte `at` bytes into the first file under `dir` whose name ends
/// in `suffix`; its path.
fs::path flip_byte(const fs::path& dir, const std::string& suffix, size_t at) {
  for (auto& e : fs::recursive_directory_iterator{dir}) {
    auto name = e.path().filename().string();
    if (!e.is_regular_file() || name.size() < suffix.size()
        || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::fstream f{e.path(), std::ios::in | std::ios::out | std::ios::binary};
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(static_cast<char>(c ^ 0x40));
    return e.path();
  }
  ADD_FAILURE() << "no *" << suffix << " under " << dir;
  return {};
}

std::string contents(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

std::vector<fs::path> damaged_dirs(const fs::path& replica) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator{replica})
    if (e.path().filename().string().rfind("damaged-", 0) == 0)
      out.push_back(e.path());
  return out;
}

} // namespace

TEST(replica_storage,
     a_log_damaged_before_its_end_is_moved_aside_and_the_replica_rejoins_amnesiac) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 20, false, true);
  auto replica = dir.path() / "replica";
  auto seg = flip_byte(replica / "log", ".wal", 40); // inside the first record
  auto damaged = contents(seg);
  {
    auto s = nd::open_replica_storage(dir.path().string(), 3);
    ASSERT_TRUE(s) << s.error();
    EXPECT_TRUE(s.value().amnesiac);
    EXPECT_TRUE(s.value().moved_damaged_aside);
    EXPECT_NE(s.value().recovery_note.find("moved it aside"), std::string::npos)
        << s.value().recovery_note;
    // The promised term stays; the log starts empty.
    EXPECT_EQ(s.value().terms->load(), (rp::term{3, rp::node_id{2}, 1}));
    auto rec = s.value().device->recover();
    ASSERT_TRUE(rec);
    EXPECT_TRUE(rec.value().records.empty());
    // Nothing deleted: the damaged segment, byte for byte, in damaged-<ms>/.
    auto aside = damaged_dirs(replica);
    ASSERT_EQ(aside.size(), 1u);
    EXPECT_EQ(contents(aside[0] / "log" / seg.filename()), damaged);
    EXPECT_TRUE(fs::exists(replica / "amnesiac"));
  }
  {
    // A restart before the log is rebuilt: still amnesiac, nothing moved again.
    auto again = nd::open_replica_storage(dir.path().string(), 3);
    ASSERT_TRUE(again) << again.error();
    EXPECT_TRUE(again.value().amnesiac);
    EXPECT_FALSE(again.value().moved_damaged_aside); // moved by the first start
    EXPECT_EQ(damaged_dirs(replica).size(), 1u);
    // Rebuilt: the mark goes, and the next start is a normal one.
    ASSERT_TRUE(again.value().healed);
    again.value().healed();
    EXPECT_FALSE(fs::exists(replica / "amnesiac"));
  }
  auto healed = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(healed) << healed.error();
  EXPECT_FALSE(healed.value().amnesiac);
}

TEST(replica_storage, a_damaged_checkpoint_is_moved_aside_too) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 4, true);
  auto replica = dir.path() / "replica";
  flip_byte(replica / "checkpoints", ".ckpt", 20);
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_TRUE(s.value().amnesiac);
  ASSERT_EQ(damaged_dirs(replica).size(), 1u);
  EXPECT_TRUE(fs::exists(damaged_dirs(replica)[0] / "checkpoints"));
}

TEST(replica_storage, a_single_replica_with_a_damaged_log_refuses_and_moves_nothing) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 20, false, true);
  auto replica = dir.path() / "replica";
  auto seg = flip_byte(replica / "log", ".wal", 40);
  auto damaged = contents(seg);
  auto s = nd::open_replica_storage(dir.path().string(), 1);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("single replica"), std::string::npos) << s.error();
  EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
  EXPECT_EQ(contents(seg), damaged);
  EXPECT_TRUE(damaged_dirs(replica).empty());
  EXPECT_FALSE(fs::exists(replica / "amnesiac"));
}

TEST(replica_storage, a_damaged_log_without_its_term_file_is_refused_not_healed) {
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 20, false, true);
  auto replica = dir.path() / "replica";
  auto seg = flip_byte(replica / "log", ".wal", 40);
  ASSERT_TRUE(fs::remove(replica / "term"));
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_FALSE(s);
  EXPECT_TRUE(fs::exists(seg));
  EXPECT_TRUE(damaged_dirs(replica).empty());
}

TEST(replica_storage, a_crash_between_the_mark_and_the_move_heals_on_the_next_start) {
  // The storage writes the mark first, then moves the damaged files: a crash
  // in between leaves both. The next start moves them and stays amnesiac.
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 20, false, true);
  auto replica = dir.path() / "replica";
  auto seg = flip_byte(replica / "log", ".wal", 40);
  auto damaged = contents(seg);
  std::ofstream{replica / "amnesiac"} << "left by a crash\n";
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_TRUE(s.value().amnesiac);
  auto aside = damaged_dirs(replica);
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(contents(aside[0] / "log" / seg.filename()), damaged);
}

TEST(replica_storage, a_mark_beside_a_log_that_reads_still_means_amnesiac) {
  // A crash after the move, or while the log was being rebuilt: whatever the
  // log holds now, the mark decides until the replica says it is rebuilt.
  conclave::test::temp_dir dir{"replica-storage"};
  fill(dir.path().string(), 5, false, true);
  auto replica = dir.path() / "replica";
  std::ofstream{replica / "amnesiac"} << "left by a crash\n";
  auto s = nd::open_replica_storage(dir.path().string(), 3);
  ASSERT_TRUE(s) << s.error();
  EXPECT_TRUE(s.value().amnesiac);
  EXPECT_TRUE(damaged_dirs(replica).empty()); // nothing to move
  auto rec = s.value().device->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec.value().records.size(), 5u); // and nothing lost
}

TEST(replica_storage,
     a_damaged_log_beside_a_lost_or_corrupt_term_file_says_why_it_stays) {
  for (bool corrupt : {false, true}) {
    conclave::test::temp_dir dir{"replica-storage"};
    fill(dir.path().string(), 20, false, true);
    auto replica = dir.path() / "replica";
    auto seg = flip_byte(replica / "log", ".wal", 40);
    if (corrupt)
      std::ofstream{replica / "term", std::ios::binary | std::ios::trunc} << "CTRM?";
    else
      ASSERT_TRUE(fs::remove(replica / "term"));
    auto s = nd::open_replica_storage(dir.path().string(), 3);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().find("term file"), std::string::npos) << s.error();
    EXPECT_NE(s.error().find(corrupt ? "does not read" : "is missing"), std::string::npos)
        << s.error();
    EXPECT_EQ(s.error().find('\n'), std::string::npos) << s.error();
    EXPECT_TRUE(fs::exists(seg));
    EXPECT_TRUE(damaged_dirs(replica).empty());
    EXPECT_FALSE(fs::exists(replica / "amnesiac"));
  }
}

TEST(replica_storage, the_heal_decision_covers_every_case) {
  using v = nd::damaged_open_verdict;
  nd::damaged_open_facts f;
  f.members = 3;
  f.term_present = f.term_reads = true;
  EXPECT_EQ(nd::decide_damaged_open(f), v::not_damaged); // nothing to heal
  f.damaged = true;
  EXPECT_EQ(nd::decide_damaged_open(f), v::heal); // peers and an intact promise
  for (size_t members : {size_t{0}, size_t{1}}) {
    auto single = f;
    single.members = members;
    EXPECT_EQ(nd::decide_damaged_open(single), v::refuse_single_replica);
  }
  auto lost = f;
  lost.term_present = lost.term_reads = false;
  EXPECT_EQ(nd::decide_damaged_open(lost), v::refuse_term_unknown);
  auto unreadable = f;
  unreadable.term_reads = false;
  EXPECT_EQ(nd::decide_damaged_open(unreadable), v::refuse_term_unknown);
  auto two = f;
  two.members = 2;
  EXPECT_EQ(nd::decide_damaged_open(two), v::heal);
  // A single replica refuses whatever its term file says.
  auto single_lost = lost;
  single_lost.members = 1;
  EXPECT_EQ(nd::decide_damaged_open(single_lost), v::refuse_single_replica);
}
