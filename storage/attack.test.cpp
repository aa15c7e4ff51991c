// An outside attack on the store's promises (docs/design/store.md, "Guarantees" and
// "Checkpoints, truncation, recovery"), in the manner of Jepsen or a simulated
// disk: bytes of every file the store writes (log segments with their
// zero-filled tails, checkpoints, backup files and manifests) are flipped,
// overwritten or cut at seeded random positions, and each outcome must be one
// the docs allow: the store opens with every acknowledged commit (or loses only
// a torn last record, whose bytes are kept in lost+found), or it refuses with
// corrupt_data and leaves every byte on disk as it was; a repair keeps a copy
// of every byte it drops and a second repair finds nothing; a read-only check
// never changes anything. Also the limits at their edges: transaction size
// limits of 0, 1 and the maximum.
#include "storage/collections.hpp"
#include "storage/file_util.hpp"
#include "storage/inspect.hpp"
#include "storage/log_scan.hpp"

#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>

using namespace conclave::store;
namespace fs = std::filesystem;

using conclave::test::code;

namespace {

constexpr int commits = 600;
constexpr int first_checkpoint_at = 300; // keys k0..k299 before it
constexpr int second_checkpoint_at = 450;

using dir_image = std::map<std::string, std::string>;

/// Every regular file under `root` (LOCK aside) and its bytes.
dir_image image_of(const fs::path& root) {
  dir_image out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().filename() != "LOCK") {
      out[e.path().lexically_relative(root).string()] =
          files::read_file(e.path()).value();
    }
  return out;
}

void write_image(const fs::path& root, const dir_image& image) {
  fs::remove_all(root);
  for (auto& [name, bytes] : image) {
    fs::create_directories((root / name).parent_path());
    std::ofstream out{root / name, std::ios::binary | std::ios::trunc};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

class attack_test : public testing::Test {
protected:
  state_manager_options options(const fs::path& d) {
    state_manager_options o;
    o.dir = d;
    o.segment_bytes = 2048; // many segments, each with a zero-filled tail
    o.preallocate_bytes = 1024;
    o.checkpoint_log_bytes = 0;
    o.sync = [](int) { return 0; }; // no crash here: only the bytes matter
    o.checkpoint_sync = [](int) { return 0; };
    o.log = [this](const std::string& line) { log += line + "\n"; };
    return o;
  }

  /// A store of `commits` acknowledged commits (key k<i> = i, lsn i + 2) with
  /// two checkpoints among them, and a full and an incremental backup.
  void build_base() {
    auto s = state_manager::open(options(dir / "base")).value();
    auto d = s->dictionary<std::string, int32_t>("d").value();
    for (int i = 0; i < commits; ++i) {
      auto tx = s->begin();
      ASSERT_TRUE(d.add_or_update(tx, "k" + std::to_string(i), i));
      ASSERT_TRUE(tx.commit());
      if (i + 1 == first_checkpoint_at || i + 1 == second_checkpoint_at) {
        ASSERT_TRUE(s->checkpoint());
      }
      if (i + 1 == 400) {
        ASSERT_TRUE(s->backup(dir / "backups", false));
      }
    }
    ASSERT_TRUE(s->backup(dir / "backups", true));
    s.reset();
    base = image_of(dir / "base");
    backups = image_of(dir / "backups");
  }

  /// Where the valid records at the start of a segment's bytes end.
  static size_t records_end(std::string_view bytes) {
    size_t pos = 0;
    for (;;) {
      auto d = decode_record(bytes.substr(pos));
      if (d.status != decode_status::ok)
        return pos;
      pos += d.size;
    }
  }

  /// The segment before `next` in the base image.
  std::string segment_before(const std::string& next) const {
    std::string prev;
    for (auto& [file, bytes] : base)
      if (file.rfind("log/seg-", 0) == 0 && file < next)
        prev = file;
    return prev;
  }

  /// The keys a store holds, checked to be k0..k<n-1> with their values.
  static int intact_prefix(state_manager& s) {
    auto d = s.dictionary<std::string, int32_t>("d").value();
    auto tx = s.begin();
    auto all = d.enumerate(tx).value();
    std::map<int, int32_t> by_index;
    for (auto& [k, v] : all)
      by_index[std::stoi(k.substr(1))] = v;
    int n = 0;
    for (auto& [i, v] : by_index) {
      if (i != n || v != i)
        return -1; // a hole or a wrong value
      ++n;
    }
    return n;
  }

  conclave::test::temp_dir dir{"conclave-attack"};
  dir_image base, backups;
  std::string log;
};

enum class damage { flip_bit, random_byte, cut };

/// Damages `bytes` at `offset`; returns a description.
std::string apply(damage how, std::string& bytes, size_t offset, std::mt19937_64& rng) {
  switch (how) {
  case damage::flip_bit:
    bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << (rng() % 8)));
    return "flip at " + std::to_string(offset);
  case damage::random_byte: {
    auto old = bytes[offset];
    do {
      bytes[offset] = static_cast<char>(rng());
    } while (bytes[offset] == old);
    return "byte at " + std::to_string(offset);
  }
  case damage::cut:
    bytes.resize(offset);
    return "cut at " + std::to_string(offset);
  }
  return {};
}

} // namespace

// Every file of the data directory, damaged at random positions: the open
// either keeps every acknowledged commit (a torn last record aside, kept in
// lost+found), or refuses and changes nothing; a read-only check changes
// nothing either; a refused store repairs with every dropped byte kept, and a
// second repair finds nothing to do.
TEST_F(attack_test, random_damage_to_any_file_has_a_documented_outcome) {
  build_base();
  std::vector<std::string> names;
  for (auto& [name, bytes] : base)
    if (!bytes.empty())
      names.push_back(name);
  ASSERT_GT(names.size(), 8u) << names.size();
  std::mt19937_64 rng{20261123};
  int opened = 0, refused = 0, repaired = 0;
  for (int round = 0; round < 120; ++round) {
    auto damaged = base;
    auto name = names[rng() % names.size()];
    auto& bytes = damaged[name];
    auto how = static_cast<damage>(rng() % 3);
    // Half the rounds aim at the records, half anywhere (zero tails included).
    size_t offset = rng() % bytes.size();
    auto what = name + ": " + apply(how, bytes, offset, rng);
    SCOPED_TRACE(what);
    std::string last_seg;
    for (auto& [file, b] : base)
      if (file.rfind("log/seg-", 0) == 0)
        last_seg = file;
    bool last_segment = name == last_seg;
    auto data = dir / "data";
    write_image(data, damaged);

    auto checked = check_data_dir(data);
    ASSERT_TRUE(checked);
    ASSERT_EQ(image_of(data), damaged) << "check changed the directory";

    log.clear();
    auto r = state_manager::open(options(data));
    if (r) {
      ++opened;
      int n = intact_prefix(*r.value());
      EXPECT_GE(n, 0) << "a hole or a wrong value";
      if (n != commits && how == damage::cut) {
        // A cut takes bytes away, as a crash takes unsynced ones: only a cut
        // of the last segment may lose records, and it keeps a prefix.
        EXPECT_TRUE(last_segment) << n << "\n" << log;
      } else if (n != commits) {
        // Only the last record may go, and only as a torn tail with a copy.
        EXPECT_TRUE(last_segment) << n << "\n" << log;
        EXPECT_EQ(n, commits - 1) << log;
        EXPECT_TRUE(r.value()->recovery().tail_cut) << log;
        EXPECT_FALSE(r.value()->recovery().moved_to.empty()) << log;
      }
      continue;
    }
    ++refused;
    EXPECT_EQ(code(r.error()), errc::corrupt_data) << r.error().message() << "\n" << log;
    EXPECT_NE(log.find("at byte"), std::string::npos) << log;
    EXPECT_FALSE(checked.value().clean()) << "check called a refused store clean";
    ASSERT_EQ(image_of(data), damaged) << "a refused open changed the directory";

    // The operator repairs: every byte dropped from a segment is in lost+found.
    auto o = options(data);
    o.repair = true;
    auto fixed = state_manager::open(o);
    ASSERT_TRUE(fixed) << fixed.error().message() << "\n" << log;
    ++repaired;
    EXPECT_GE(intact_prefix(*fixed.value()), 0);
    auto after = image_of(data);
    for (auto& [file, original] : damaged) {
      if (file.rfind("log/seg-", 0) != 0)
        continue;
      auto now = after.find(file);
      std::string kept = now == after.end() ? std::string{} : now->second;
      ASSERT_EQ(original.compare(0, kept.size(), kept), 0) << file << " changed, not cut";
      if (kept.size() == original.size())
        continue;
      auto seg_name = fs::path{file}.filename().string();
      std::string copy;
      for (auto& [lf, lf_bytes] : after)
        if (lf.rfind("log/lost+found/" + seg_name, 0) == 0)
          copy = lf_bytes;
      auto dropped = original.substr(kept.size());
      // Preallocated zeros after the records need no copy.
      EXPECT_EQ(dropped.compare(0, copy.size(), copy), 0) << file;
      EXPECT_TRUE(all_zero(std::string_view{dropped}.substr(copy.size())))
          << file << ": " << dropped.size() - copy.size() << " dropped bytes not kept";
    }
    fixed.value().reset();
    auto again = state_manager::open(o);
    ASSERT_TRUE(again) << log;
    EXPECT_FALSE(again.value()->recovery().tail_cut) << "a second repair cut again";
    EXPECT_EQ(again.value()->recovery().dropped_records, 0u);
    EXPECT_EQ(image_of(data).size(), after.size());
  }
  EXPECT_GT(opened, 10);
  EXPECT_GT(refused, 10);
  EXPECT_EQ(repaired, refused);
}

// A repair on a clean store changes nothing, twice.
TEST_F(attack_test, repair_on_a_clean_store_changes_nothing) {
  build_base();
  auto data = dir / "data";
  write_image(data, base);
  auto o = options(data);
  o.repair = true;
  for (int i = 0; i < 2; ++i) {
    auto s = state_manager::open(o);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s.value()->recovery().tail_cut);
    EXPECT_EQ(s.value()->recovery().dropped_records, 0u);
    EXPECT_EQ(intact_prefix(*s.value()), commits);
  }
  EXPECT_EQ(image_of(data), base);
}

// Found by the attack above: damage in the zero-filled tail of a segment the
// checkpoint covers (never read), and corruption at the start of the next
// segment. The repair cuts at offset 0 of that next segment, which leaves the
// covered segment last: the next open reads it and would cut its damaged tail,
// a second cut. One repair must cut all of it: a second one is a no-op.
TEST_F(attack_test, one_repair_is_final_when_it_leaves_a_covered_segment_last) {
  build_base();
  // The segment the checkpoint at lsn 451 starts, and the one before it.
  auto next = "log/" + files::lsn_name("seg-", lsn{452}, ".wal");
  auto covered = segment_before(next);
  ASSERT_TRUE(base.count(covered) && base.count(next));
  auto damaged = base;
  auto records_end = attack_test::records_end(damaged[covered]);
  const auto at = records_end + 40; // in the zero tail
  ASSERT_GT(damaged[covered].size(), at);
  ASSERT_TRUE(all_zero(std::string_view{damaged[covered]}.substr(records_end)));
  damaged[covered][at] = static_cast<char>(damaged[covered][at] ^ 4);
  damaged[next][30] = static_cast<char>(damaged[next][30] ^ 4);
  auto data = dir / "data";
  write_image(data, damaged);

  auto plain = state_manager::open(options(data));
  ASSERT_FALSE(plain);
  EXPECT_EQ(code(plain.error()), errc::corrupt_data);
  EXPECT_NE(log.find(next.substr(4) + " at byte"), std::string::npos) << log;
  ASSERT_EQ(image_of(data), damaged) << "a refused open changed the directory";

  auto o = options(data);
  o.repair = true;
  {
    log.clear();
    auto fixed = state_manager::open(o);
    ASSERT_TRUE(fixed) << fixed.error().message() << "\n" << log;
    EXPECT_TRUE(fixed.value()->recovery().tail_cut);
    // Everything up to the checkpoint at lsn 451 (k0..k449) stays.
    EXPECT_EQ(intact_prefix(*fixed.value()), 450) << log;
  }
  auto after = image_of(data);
  // The covered segment keeps its records; its damaged tail has a copy.
  ASSERT_TRUE(after.count(covered));
  EXPECT_EQ(after[covered], base[covered].substr(0, records_end)) << log;
  std::string copy;
  for (auto& [file, bytes] : after)
    if (file.rfind("log/lost+found/" + covered.substr(4), 0) == 0)
      copy = bytes;
  ASSERT_FALSE(copy.empty()) << log;
  EXPECT_EQ(copy, damaged[covered].substr(records_end, at + 1 - records_end));
  auto checked = check_data_dir(data);
  ASSERT_TRUE(checked);
  EXPECT_TRUE(checked.value().clean()) << log;

  log.clear();
  auto again = state_manager::open(o);
  ASSERT_TRUE(again) << log;
  EXPECT_FALSE(again.value()->recovery().tail_cut)
      << "a second repair cut again: " << log;
  EXPECT_EQ(again.value()->recovery().dropped_records, 0u);
  EXPECT_EQ(intact_prefix(*again.value()), 450);
  again.value().reset();
  EXPECT_EQ(image_of(data), after);
}

// The same with a plain open: the segment after the covered one is empty (as
// a crash right after a checkpoint's roll leaves it) and nothing follows. The
// open removes the empty file, which leaves the covered segment last: its
// damaged tail is cut by that same open, not by the next one.
TEST_F(attack_test, an_open_that_leaves_a_covered_segment_last_cuts_its_tail_once) {
  build_base();
  auto next = "log/" + files::lsn_name("seg-", lsn{452}, ".wal");
  auto covered = segment_before(next);
  auto damaged = base;
  ASSERT_TRUE(damaged.count(covered) && damaged.count(next));
  for (auto i = damaged.find(next); i != damaged.end();)
    i = i->first.rfind("log/seg-", 0) == 0 ? damaged.erase(i) : std::next(i);
  damaged[next] = "";
  auto records_end = attack_test::records_end(damaged[covered]);
  const auto at = records_end + 40; // in the zero tail
  ASSERT_GT(damaged[covered].size(), at);
  damaged[covered][at] = static_cast<char>(damaged[covered][at] ^ 4);
  auto data = dir / "data";
  write_image(data, damaged);
  {
    auto s = state_manager::open(options(data));
    ASSERT_TRUE(s) << log;
    EXPECT_TRUE(s.value()->recovery().tail_cut) << log;
    EXPECT_EQ(intact_prefix(*s.value()), 450);
  }
  auto after = image_of(data);
  EXPECT_EQ(after[covered], base[covered].substr(0, records_end));
  EXPECT_FALSE(after.count(next));
  log.clear();
  auto again = state_manager::open(options(data));
  ASSERT_TRUE(again) << log;
  EXPECT_FALSE(again.value()->recovery().tail_cut)
      << "the second open cut again: " << log;
  EXPECT_EQ(intact_prefix(*again.value()), 450);
}

// A backup with any file damaged restores either everything or fails; it never
// restores a store that lacks an acknowledged commit or holds a wrong value.
TEST_F(attack_test, restore_of_a_damaged_backup_restores_all_or_fails) {
  build_base();
  std::vector<std::string> names;
  for (auto& [name, bytes] : backups)
    if (!bytes.empty())
      names.push_back(name);
  ASSERT_GE(names.size(), 4u);
  std::mt19937_64 rng{7};
  int failed = 0;
  for (int round = 0; round < 60; ++round) {
    auto damaged = backups;
    auto name = names[rng() % names.size()];
    auto& bytes = damaged[name];
    auto what = name + ": "
                + apply(static_cast<damage>(rng() % 3), bytes, rng() % bytes.size(), rng);
    SCOPED_TRACE(what);
    write_image(dir / "b", damaged);
    auto target = dir / ("restored" + std::to_string(round));
    auto r = state_manager::restore(dir / "b", target);
    if (!r) {
      ++failed;
      EXPECT_EQ(image_of(dir / "b"), damaged) << "restore changed the backup";
      continue;
    }
    auto s = state_manager::open(options(target));
    ASSERT_TRUE(s) << s.error().message() << "\n" << log;
    EXPECT_EQ(intact_prefix(*s.value()), commits);
  }
  EXPECT_GT(failed, 20);
}

// The transaction size limit at its edges: 0 and 1 refuse every record (a
// read-only transaction writes none, so it still commits), the maximum allows
// an ordinary transaction, and a limit above the decoder's is capped by it.
TEST_F(attack_test, transaction_size_limits_at_zero_one_and_max) {
  for (uint64_t limit : {uint64_t{0}, uint64_t{1}}) {
    auto data = dir / ("limit" + std::to_string(limit));
    auto o = options(data);
    o.limits.max_record_body = limit;
    auto s = state_manager::open(o);
    ASSERT_TRUE(s);
    auto d = s.value()->dictionary<std::string, std::string>("d");
    // Creating a collection is not a transaction: it is not limited.
    ASSERT_TRUE(d);
    auto tx = s.value()->begin();
    ASSERT_TRUE(d.value().add_or_update(tx, "k", "v"));
    auto refused = tx.commit();
    ASSERT_FALSE(refused);
    EXPECT_EQ(code(refused.error()), errc::transaction_too_large);
    if (limit == 0) {
      ASSERT_TRUE(tx.abort()); // as documented: a refused transaction is aborted
    } else {
      // Or its handle is dropped, which aborts it and frees its lock.
      tx = s.value()->begin();
    }
    auto reader = s.value()->begin();
    auto got = d.value().try_get(reader, "k", read_mode::repeatable,
                                 std::chrono::milliseconds{0});
    ASSERT_TRUE(got) << "the refused transaction still holds its lock";
    EXPECT_FALSE(got.value());
    auto read_only = reader.commit();
    EXPECT_TRUE(read_only) << "a read-only commit refused by a record limit";
    auto q = s.value()->queue<std::string>("q").value();
    auto empty_take = s.value()->begin();
    EXPECT_FALSE(q.try_dequeue(empty_take).value());
    EXPECT_TRUE(empty_take.commit());
  }
  auto o = options(dir / "max");
  o.limits.max_record_body = std::numeric_limits<uint64_t>::max();
  auto s = state_manager::open(o);
  ASSERT_TRUE(s);
  auto d = s.value()->dictionary<std::string, std::string>("d").value();
  auto tx = s.value()->begin();
  ASSERT_TRUE(d.add_or_update(tx, "k", "v"));
  EXPECT_TRUE(tx.commit());
}
