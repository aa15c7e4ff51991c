// Recovery never deletes acknowledged data (docs/design/store.md, "Recovery"):
// damage among records the checkpoint covers loses nothing, corruption before
// valid records refuses the open and changes nothing until an operator
// repairs, a torn tail is cut and its bytes are kept in log/lost+found, and a
// checkpoint that cannot be read is not taken for a corrupt one.
#include "storage/checkpoint_file.hpp"
#include "storage/collections.hpp"
#include "storage/log_scan.hpp"

#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

using namespace conclave::store;
namespace fs = std::filesystem;

using conclave::test::code;

namespace {

class recovery_test : public testing::Test {
protected:
  state_manager_options options() {
    state_manager_options o;
    o.dir = dir / "data";
    o.segment_bytes = segment_bytes;
    o.checkpoint_log_bytes = 0;
    o.log = [this](const std::string& line) { log.push_back(line); };
    return o;
  }

  std::unique_ptr<state_manager> open(state_manager_options o) {
    auto r = state_manager::open(std::move(o));
    EXPECT_TRUE(r) << (r ? "" : r.error().message()) << "\n" << joined_log();
    return r ? std::move(r.value()) : nullptr;
  }

  std::string joined_log() const {
    std::string all;
    for (auto& l : log)
      all += l + "\n";
    return all;
  }

  /// Commits keys k<from>..k<to-1>, one transaction each (lsn = index + 2:
  /// lsn 1 creates the dictionary).
  static void fill(state_manager& s, int from, int to) {
    auto d = s.dictionary<std::string, int32_t>("d").value();
    for (int i = from; i < to; ++i) {
      auto tx = s.begin();
      ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(i), i));
      ASSERT_TRUE(tx.commit());
    }
  }

  static size_t items(state_manager& s) {
    auto d = s.dictionary<std::string, int32_t>("d").value();
    auto tx = s.begin();
    return d.count(tx).value();
  }

  /// 900 commits with a checkpoint at lsn 601 between them.
  void checkpointed_store() {
    auto s = open(options());
    fill(*s, 0, 600);
    ASSERT_EQ(s->checkpoint().value(), lsn{601});
    fill(*s, 600, 900);
  }

  fs::path log_dir() { return dir / "data" / "log"; }

  /// Segment files, oldest first, with the lsn in their name.
  std::vector<std::pair<uint64_t, fs::path>> segments() {
    std::vector<std::pair<uint64_t, fs::path>> out;
    for (auto& e : fs::directory_iterator(log_dir()))
      if (auto l = files::parse_lsn_name(e.path().filename().string(), "seg-", ".wal"))
        out.emplace_back(l->value, e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  /// Every file under the data directory and its bytes (LOCK aside).
  std::map<std::string, std::string> snapshot() {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir / "data"))
      if (e.is_regular_file() && e.path().filename() != "LOCK")
        out[e.path().lexically_relative(dir / "data").string()] =
            files::read_file(e.path()).value();
    return out;
  }

  static void flip_bit(const fs::path& file, uint64_t offset, int bit = 3) {
    std::fstream f{file, std::ios::in | std::ios::out | std::ios::binary};
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ (1 << bit)));
  }

  std::vector<fs::path> lost_and_found() {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(log_dir() / "lost+found", ec))
      out.push_back(e.path());
    return out;
  }

  uint64_t segment_bytes = 4096; // many segments
  conclave::test::temp_dir dir{"conclave-recovery"};
  std::vector<std::string> log;
};

} // namespace

TEST_F(recovery_test, a_bit_flip_the_checkpoint_covers_loses_nothing_nor_does_a_backup) {
  checkpointed_store();
  auto segs = segments();
  ASSERT_GT(segs.size(), 6u);
  // A segment in the middle of those the checkpoint covers.
  auto victim = segs[2].second;
  ASSERT_LT(segs[3].first, 601u);
  flip_bit(victim, fs::file_size(victim) / 2);
  auto before = segments();
  {
    auto s = open(options());
    ASSERT_TRUE(s);
    EXPECT_EQ(items(*s), 900u);
    EXPECT_FALSE(s->recovery().tail_cut) << s->recovery().cut_reason;
    EXPECT_EQ(s->recovery().last, lsn{901});
    // The backup opened the store the same way: all 900 are in it.
    ASSERT_TRUE(s->backup(dir / "backup", false));
  }
  EXPECT_EQ(segments(), before); // no segment cut or removed
  ASSERT_TRUE(state_manager::restore(dir / "backup", dir / "restored"));
  auto o = options();
  o.dir = dir / "restored";
  auto r = open(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(items(*r), 900u);
}

TEST_F(recovery_test, a_deleted_segment_the_checkpoint_covers_loses_nothing) {
  checkpointed_store();
  auto segs = segments();
  ASSERT_GT(segs.size(), 6u);
  ASSERT_LT(segs[3].first, 601u);
  fs::remove(segs[2].second);
  {
    auto s = open(options());
    ASSERT_TRUE(s);
    EXPECT_EQ(items(*s), 900u);
    EXPECT_FALSE(s->recovery().tail_cut);
    ASSERT_TRUE(s->backup(dir / "backup", false));
  }
  ASSERT_TRUE(state_manager::restore(dir / "backup", dir / "restored"));
  auto o = options();
  o.dir = dir / "restored";
  auto r = open(o);
  ASSERT_TRUE(r);
  EXPECT_EQ(items(*r), 900u);
}

TEST_F(recovery_test, an_early_flip_without_checkpoint_refuses_and_repair_keeps_a_copy) {
  segment_bytes = 64u << 20; // one segment
  {
    auto s = open(options());
    fill(*s, 0, 300);
  }
  auto seg = segments().front().second;
  flip_bit(seg, 200); // in the second or third record
  auto before = snapshot();
  auto refused = state_manager::open(options());
  ASSERT_FALSE(refused);
  EXPECT_EQ(code(refused.error()), errc::corrupt_data);
  auto text = joined_log();
  EXPECT_NE(text.find(seg.filename().string() + " at byte "), std::string::npos) << text;
  EXPECT_NE(text.find("store repair"), std::string::npos) << text;
  EXPECT_EQ(snapshot(), before); // nothing deleted, cut or renamed
  // The operator accepts the loss.
  auto o = options();
  o.repair = true;
  uint64_t kept = 0;
  {
    auto s = open(o);
    ASSERT_TRUE(s);
    auto& r = s->recovery();
    EXPECT_TRUE(r.tail_cut);
    EXPECT_GT(r.dropped_records, 250u);
    EXPECT_EQ(r.dropped_last, lsn{301});
    kept = items(*s);
    EXPECT_LT(kept, 3u);
    ASSERT_EQ(r.moved_to.size(), 1u);
    auto name = r.moved_to[0].filename().string();
    auto offset = std::stoull(name.substr(34));
    // The copy is every byte the repair dropped, unchanged; only the zeros
    // preallocated after the records are not copied.
    auto copy = files::read_file(r.moved_to[0]).value();
    auto original = before.at("log/" + seg.filename().string()).substr(offset);
    EXPECT_EQ(copy, original.substr(0, copy.size()));
    EXPECT_TRUE(all_zero(std::string_view{original}.substr(copy.size())));
    fill(*s, 1000, 1010); // the store goes on
  }
  auto s = open(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(items(*s), kept + 10);
}

TEST_F(recovery_test, flips_in_the_log_after_the_checkpoint_refuse_the_open) {
  checkpointed_store();
  auto segs = segments();
  // After the checkpoint: the segments from lsn 602 on.
  std::vector<fs::path> after;
  for (auto& [l, p] : segs)
    if (l >= 602)
      after.push_back(p);
  ASSERT_GT(after.size(), 3u);
  for (auto victim : {after[1], after[after.size() / 2], after.front()}) {
    auto original = files::read_file(victim).value();
    flip_bit(victim, original.size() / 3);
    auto before = snapshot();
    log.clear();
    auto refused = state_manager::open(options());
    ASSERT_FALSE(refused) << victim;
    EXPECT_EQ(code(refused.error()), errc::corrupt_data);
    EXPECT_NE(joined_log().find(victim.filename().string()), std::string::npos)
        << joined_log();
    EXPECT_EQ(snapshot(), before);
    ASSERT_TRUE(files::write_file_synced(victim, original, files::default_sync()));
  }
  auto s = open(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(items(*s), 900u);
}

TEST_F(recovery_test, a_needed_segment_deleted_refuses_the_open) {
  checkpointed_store();
  std::vector<fs::path> after;
  for (auto& [l, p] : segments())
    if (l >= 602)
      after.push_back(p);
  ASSERT_GT(after.size(), 3u);
  fs::remove(after[1]);
  auto before = snapshot();
  auto refused = state_manager::open(options());
  ASSERT_FALSE(refused);
  EXPECT_NE(joined_log().find("missing"), std::string::npos) << joined_log();
  EXPECT_EQ(snapshot(), before);
}

TEST_F(recovery_test, a_torn_tail_is_cut_and_kept_in_lost_and_found) {
  segment_bytes = 64u << 20;
  {
    auto o = options();
    o.preallocate_bytes = 0; // so that cutting the file's end cuts a record
    auto s = open(o);
    fill(*s, 0, 20);
  }
  auto seg = segments().back().second;
  auto original = files::read_file(seg).value();
  fs::resize_file(seg, original.size() - 7); // mid-record
  {
    auto s = open(options());
    ASSERT_TRUE(s);
    EXPECT_EQ(items(*s), 19u);
    EXPECT_TRUE(s->recovery().tail_cut);
    ASSERT_EQ(s->recovery().moved_to.size(), 1u);
    auto kept = files::read_file(s->recovery().moved_to[0]).value();
    auto cut = fs::file_size(seg);
    EXPECT_EQ(kept, original.substr(cut, original.size() - 7 - cut));
    fill(*s, 19, 20);
  }
  // Garbage appended after the last record.
  seg = segments().back().second;
  {
    std::ofstream out{seg, std::ios::binary | std::ios::app};
    out << "\x01garbage that is not a record";
  }
  auto s = open(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(items(*s), 20u);
  EXPECT_TRUE(s->recovery().tail_cut);
  EXPECT_EQ(lost_and_found().size(), 2u);
}

TEST_F(recovery_test, an_unreadable_checkpoint_is_not_renamed_corrupt) {
  {
    auto s = open(options());
    fill(*s, 0, 10);
    ASSERT_TRUE(s->checkpoint());
    fill(*s, 10, 20);
    ASSERT_TRUE(s->checkpoint());
  }
  // A directory in place of each checkpoint file: read() fails with EISDIR,
  // even for root, and proves nothing about the data.
  auto files = list_checkpoints(dir / "data");
  ASSERT_EQ(files.size(), 2u);
  for (auto& f : files) {
    fs::rename(f, f.string() + ".saved");
    fs::create_directory(f);
  }
  auto refused = state_manager::open(options());
  ASSERT_FALSE(refused);
  EXPECT_NE(code(refused.error()), errc::corrupt_data);
  for (auto& f : files) {
    EXPECT_TRUE(fs::is_directory(f)) << f;
    EXPECT_FALSE(fs::exists(f.string() + ".corrupt")) << f;
  }
  EXPECT_NE(joined_log().find("cannot read checkpoint"), std::string::npos)
      << joined_log();
  for (auto& f : files) {
    fs::remove(f);
    fs::rename(f.string() + ".saved", f);
  }
  auto s = open(options());
  ASSERT_TRUE(s);
  EXPECT_EQ(items(*s), 20u);
}

TEST_F(recovery_test, a_transaction_larger_than_the_log_reads_back_is_refused_not_lost) {
  EXPECT_EQ(core_limits{}.max_record_body, max_record_body); // one limit by default
  auto o = options();
  o.limits.max_record_body = 64u << 10; // the same check, cheaper to reach
  {
    auto s = open(o);
    auto d = s->dictionary<std::string, std::string>("big").value();
    auto big = s->begin();
    for (int i = 0; i < 80; ++i)
      ASSERT_TRUE(d.add_or_update(big, "k" + std::to_string(i), std::string(1000, 'x')));
    auto refused = big.commit();
    ASSERT_FALSE(refused);
    EXPECT_EQ(code(refused.error()), errc::transaction_too_large);
    // Just under the limit commits, and so does the next transaction.
    auto fits = s->begin();
    for (int i = 0; i < 60; ++i)
      ASSERT_TRUE(d.add_or_update(fits, "f" + std::to_string(i), std::string(1000, 'y')));
    ASSERT_TRUE(fits.commit());
    auto next = s->begin();
    ASSERT_TRUE(d.add_or_update(next, "after", "z"));
    ASSERT_TRUE(next.commit());
  }
  auto s = open(o);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->recovery().tail_cut);
  auto d = s->dictionary<std::string, std::string>("big").value();
  auto tx = s->begin();
  EXPECT_EQ(d.count(tx).value(), 61u);
  EXPECT_FALSE(d.try_get(tx, "k0").value());
}
