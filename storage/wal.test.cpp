// The log files alone: replay after reopen, group commit against the serial
// baseline, every cut and bit flip of the last record, corruption in an
// earlier segment, failed fsync, segment roll and truncation, checkpoint files.
#include "storage/wal.hpp"

#include "storage/checkpoint_file.hpp"
#include "storage/log_scan.hpp"
#include "tests/support/log_frames.hpp"
#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <thread>

using namespace conclave::store;
namespace fs = std::filesystem;

using conclave::test::code;

using conclave::test::record_frame;

namespace {

class wal_test : public testing::Test {
protected:
  wal_options options() {
    wal_options o;
    o.dir = dir.path();
    return o;
  }

  /// Opens the log and returns the lsns it replays after `after`.
  std::vector<uint64_t> replay(wal_recovery& rep, lsn after = {},
                               std::unique_ptr<wal>* keep = nullptr) {
    std::vector<uint64_t> seen;
    auto w = wal::open(
        options(), after,
        [&](const log_record& r) -> result<void> {
          seen.push_back(r.lsn.value);
          return outcome::success();
        },
        rep);
    EXPECT_TRUE(w) << (w ? "" : w.error().message());
    if (w && keep)
      *keep = std::move(w.value());
    return seen;
  }

  void write(uint64_t from, uint64_t to, wal_options o) {
    wal_recovery rep;
    auto w = wal::open(
                 o, lsn{from - 1},
                 [](const log_record&) { return result<void>{outcome::success()}; }, rep)
                 .value();
    for (uint64_t l = from; l <= to; ++l)
      ASSERT_TRUE(w->append(lsn{l}, record_frame(l)));
    ASSERT_TRUE(w->wait_durable(lsn{to}));
  }

  std::vector<fs::path> segments() {
    std::vector<fs::path> out;
    for (auto& e : fs::directory_iterator(dir / "log"))
      if (e.is_regular_file())
        out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  /// Every file of the log directory and its bytes, by name.
  std::map<std::string, std::string> contents() {
    std::map<std::string, std::string> out;
    for (auto& p : segments())
      out[p.filename().string()] = files::read_file(p).value();
    return out;
  }

  /// Overwrites `file` from byte `at` with `bytes` (damage, a torn write).
  static void overwrite(const fs::path& file, uint64_t at, std::string_view bytes) {
    std::fstream f{file, std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(static_cast<std::streamoff>(at));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << file;
  }

  static std::vector<uint64_t> range(uint64_t from, uint64_t to) {
    std::vector<uint64_t> v;
    for (auto l = from; l <= to; ++l)
      v.push_back(l);
    return v;
  }

  conclave::test::temp_dir dir{"conclave-wal"};
};

} // namespace

TEST_F(wal_test, reopen_replays_everything_after_the_given_lsn) {
  write(1, 50, options());
  wal_recovery rep;
  EXPECT_EQ(replay(rep), range(1, 50));
  EXPECT_EQ(rep.records, 50u);
  EXPECT_FALSE(rep.tail_cut);
  wal_recovery rep2;
  EXPECT_EQ(replay(rep2, lsn{45}), range(46, 50));
  // Appending continues the sequence; a wrong lsn is refused.
  std::unique_ptr<wal> w;
  wal_recovery rep3;
  replay(rep3, lsn{}, &w);
  EXPECT_EQ(code(w->append(lsn{52}, record_frame(52)).error()), errc::bad_argument);
  ASSERT_TRUE(w->append(lsn{51}, record_frame(51)));
  w.reset();
  wal_recovery rep4;
  EXPECT_EQ(replay(rep4), range(1, 51));
}

TEST_F(wal_test, a_log_that_starts_too_late_is_an_error_not_a_silent_gap) {
  write(10, 20, options()); // records 1..9 are missing
  wal_recovery rep;
  auto w = wal::open(
      options(), lsn{3},
      [](const log_record&) { return result<void>{outcome::success()}; }, rep);
  ASSERT_FALSE(w);
  EXPECT_EQ(code(w.error()), errc::corrupt_data);
}

TEST_F(wal_test, a_log_that_ends_before_the_checkpoint_does_not_become_a_gap) {
  write(1, 5, options());
  // The state (a checkpoint) is at 10: records 1..5 are covered, 6..10 gone.
  std::unique_ptr<wal> w;
  wal_recovery rep;
  EXPECT_TRUE(replay(rep, lsn{10}, &w).empty());
  ASSERT_TRUE(w->append(lsn{11}, record_frame(11)));
  ASSERT_TRUE(w->append(lsn{12}, record_frame(12)));
  ASSERT_TRUE(w->wait_durable(lsn{12}));
  w.reset();
  wal_recovery again;
  EXPECT_EQ(replay(again, lsn{10}), range(11, 12));
  EXPECT_FALSE(again.tail_cut) << again.cut_reason;
}

TEST_F(wal_test, group_commit_shares_syncs_and_serial_mode_does_not) {
  for (bool group : {true, false}) {
    conclave::test::temp_dir d{"conclave-wal-gc"};
    wal_options o;
    o.dir = d.path();
    o.group_commit = group;
    wal_recovery rep;
    auto w = wal::open(
                 o, lsn{},
                 [](const log_record&) { return result<void>{outcome::success()}; }, rep)
                 .value();
    std::mutex mtx; // appends must be in lsn order, like the state manager does
    uint64_t next = 1;
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 25; ++i) {
          lsn l;
          {
            std::lock_guard<std::mutex> guard{mtx};
            l = lsn{next++};
            ASSERT_TRUE(w->append(l, record_frame(l.value)));
          }
          ASSERT_TRUE(w->wait_durable(l));
        }
      });
    for (auto& t : threads)
      t.join();
    auto s = w->get_stats();
    EXPECT_EQ(s.records, 400u);
    if (group)
      EXPECT_LT(s.syncs, s.records);
    else
      EXPECT_EQ(s.syncs, s.records);
  }
}

// A thread that appends and waits leads its own write and sync; the writer
// thread is not involved and must not be woken either: waking it after every
// sync for nothing cost one writer's commit a context switch and a contended
// lock (4 futex calls per commit). Records nobody waits for do wake it.
TEST_F(wal_test, a_thread_leading_its_own_syncs_never_wakes_the_writer_thread) {
  for (bool group : {true, false}) {
    conclave::test::temp_dir d{"conclave-wal-wake"};
    wal_options o;
    o.dir = d.path();
    o.group_commit = group;
    wal_recovery rep;
    auto w = wal::open(
                 o, lsn{},
                 [](const log_record&) { return result<void>{outcome::success()}; }, rep)
                 .value();
    std::promise<void> last_durable;
    w->on_durable([&](lsn l, std::error_code) {
      if (l.value == 201)
        last_durable.set_value();
    });
    for (uint64_t l = 1; l <= 200; ++l) {
      ASSERT_TRUE(w->append(lsn{l}, record_frame(l), true));
      ASSERT_TRUE(w->wait_durable(lsn{l}));
    }
    auto s = w->get_stats();
    EXPECT_EQ(s.syncs, 200u);
    // 0 in practice; a few spurious condition variable wake-ups are allowed.
    EXPECT_LE(s.writer_wakeups, 5u) << "group_commit " << group;
    // The counter counts: a record nobody waits for is the writer's job.
    ASSERT_TRUE(w->append(lsn{201}, record_frame(201)));
    last_durable.get_future().wait();
    EXPECT_GT(w->get_stats().writer_wakeups, s.writer_wakeups);
  }
}

TEST_F(wal_test, the_last_record_cut_at_every_byte_offset_recovers_the_previous_ones) {
  auto o = options();
  o.preallocate_bytes = 0; // an appended file: every cut is a torn tail
  write(1, 5, o);
  auto seg = segments().back();
  auto full = fs::file_size(seg);
  auto last = record_frame(5).size() + batch_trailer_size; // as the log stamps it
  std::string original;
  {
    std::ifstream in{seg, std::ios::binary};
    original.assign(std::istreambuf_iterator<char>{in}, {});
  }
  for (size_t keep = full - last; keep < full; ++keep) {
    {
      std::ofstream out{seg, std::ios::binary | std::ios::trunc};
      out.write(original.data(), static_cast<std::streamsize>(keep));
    }
    wal_recovery rep;
    EXPECT_EQ(replay(rep), range(1, 4)) << "cut at " << keep;
    EXPECT_EQ(rep.tail_cut, keep > full - last) << keep;
    EXPECT_EQ(fs::file_size(seg), full - last);
  }
}

// One flipped bit in the last record is rot of a record written whole (it may
// have been synced and acknowledged), not a torn write: the open refuses and
// changes nothing; a repair keeps the records before it. Damage of more than
// one bit there is cut as a torn tail, and so is the one flip a tear explains:
// the frame's last set bit cleared, zeros after it.
TEST_F(wal_test,
       every_bit_flip_in_the_last_record_refuses_the_open_and_repair_keeps_the_rest) {
  auto o = options();
  o.preallocate_bytes = 0;
  write(1, 5, o);
  auto seg = segments().back();
  std::string original;
  {
    std::ifstream in{seg, std::ios::binary};
    original.assign(std::istreambuf_iterator<char>{in}, {});
  }
  auto put = [&](const std::string& bytes) {
    std::ofstream out{seg, std::ios::binary | std::ios::trunc};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  auto noop = [](const log_record&) { return result<void>{outcome::success()}; };
  auto start = original.size() - record_frame(5).size() - batch_trailer_size;
  for (size_t bit = start * 8; bit < original.size() * 8; ++bit) {
    auto bad = original;
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    put(bad);
    wal_recovery rep;
    auto w = wal::open(options(), lsn{}, noop, rep);
    if (bad.find_first_not_of('\0', bit / 8) == std::string::npos) {
      // The frame's last set bit cleared: zeros from there on, as a write
      // torn there leaves them; cut (the next test).
      ASSERT_TRUE(w) << "bit " << bit << ": " << rep.problem;
      EXPECT_TRUE(rep.tail_cut) << "bit " << bit;
      w.value().reset();
      continue;
    }
    ASSERT_FALSE(w) << "bit " << bit;
    EXPECT_EQ(code(w.error()), errc::corrupt_data);
    EXPECT_NE(rep.problem.find("lsn 5 with one bit flipped"), std::string::npos)
        << "bit " << bit << ": " << rep.problem;
    ASSERT_EQ(files::read_file(seg).value(), bad) << "the refused open changed the file";
  }
  // A repair (the operator's decision) keeps lsn 1..4.
  auto bad = original;
  bad[start + record_header_size + 2] ^= 0x04;
  put(bad);
  auto r = options();
  r.repair = true;
  wal_recovery fixed;
  std::vector<uint64_t> got;
  auto w = wal::open(
      r, lsn{},
      [&](const log_record& x) {
        got.push_back(x.lsn.value);
        return result<void>{outcome::success()};
      },
      fixed);
  ASSERT_TRUE(w) << fixed.problem;
  EXPECT_EQ(got, (std::vector<uint64_t>{1, 2, 3, 4}));
  w.value().reset();
  // Two bits wrong in different bytes: a torn write, cut.
  bad = original;
  bad[start + record_header_size + 2] ^= 0x04;
  bad[start + record_header_size + 5] ^= 0x40;
  put(bad);
  wal_recovery rep;
  ASSERT_EQ(replay(rep), range(1, 4));
  EXPECT_TRUE(rep.tail_cut);
}

// A write torn at a byte reads as zeros from the tear on. When the last
// frame's only nonzero byte from there on had one bit set (its batch trailer's
// lsn 264 is 08 01 00 ... 00), the torn copy is one bit away from the whole
// frame, yet it is a tear, not rot: cut as a torn tail, with a copy. The same
// one-bit difference with a nonzero byte after it is rot and still refused.
TEST_F(wal_test, a_tear_that_leaves_one_bit_missing_before_zeros_is_a_torn_tail_not_rot) {
  auto o = options();
  o.preallocate_bytes = 0;
  write(1, 263, o);
  write(264, 264, o); // alone in its write: batch_first 264
  auto seg = segments().back();
  auto original = files::read_file(seg).value();
  auto trailer = original.size() - batch_trailer_size;
  ASSERT_EQ(original.substr(trailer), std::string("\x08\x01\0\0\0\0\0\0", 8));
  auto put = [&](const std::string& bytes) {
    std::ofstream out{seg, std::ios::binary | std::ios::trunc};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  // Torn after the trailer's first byte: 08 00 00 ...
  auto torn = original;
  torn[trailer + 1] = 0;
  put(torn);
  wal_recovery rep;
  ASSERT_EQ(replay(rep), range(1, 263)) << rep.problem;
  EXPECT_TRUE(rep.tail_cut);
  EXPECT_FALSE(rep.moved_to.empty()); // the cut bytes are kept
  // One bit gone with a nonzero byte after it (00 01 00 ...): rot, refused.
  auto rot = original;
  rot[trailer] = 0;
  put(rot);
  auto noop = [](const log_record&) { return result<void>{outcome::success()}; };
  wal_recovery refused;
  auto w = wal::open(options(), lsn{}, noop, refused);
  ASSERT_FALSE(w);
  EXPECT_NE(refused.problem.find("lsn 264 with one bit flipped"), std::string::npos)
      << refused.problem;
  EXPECT_EQ(files::read_file(seg).value(), rot) << "the refused open changed the file";
}

TEST_F(wal_test, corruption_before_valid_records_refuses_the_open_until_repaired) {
  auto o = options();
  o.segment_bytes = 200; // a few records per segment
  write(1, 30, o);
  auto segs = segments();
  ASSERT_GT(segs.size(), 3u);
  overwrite(segs[1], 30, "\x77");
  auto before = contents();
  wal_recovery rep;
  auto w = wal::open(
      options(), lsn{},
      [](const log_record&) { return result<void>{outcome::success()}; }, rep);
  ASSERT_FALSE(w);
  EXPECT_EQ(code(w.error()), errc::corrupt_data);
  EXPECT_NE(rep.problem.find(segs[1].filename().string() + " at byte 0"),
            std::string::npos)
      << rep.problem;
  EXPECT_EQ(contents(), before); // nothing changed on disk
  // The operator's repair cuts there and keeps a copy of every byte it drops.
  auto r = options();
  r.repair = true;
  wal_recovery fixed;
  std::vector<uint64_t> seen;
  auto repaired = wal::open(
      r, lsn{},
      [&](const log_record& rec) -> result<void> {
        seen.push_back(rec.lsn.value);
        return outcome::success();
      },
      fixed);
  ASSERT_TRUE(repaired);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen, range(1, seen.back()));
  EXPECT_LT(seen.back(), 30u);
  EXPECT_TRUE(fixed.tail_cut);
  EXPECT_GT(fixed.dropped_records, 0u);
  EXPECT_EQ(fixed.dropped_last, lsn{30});
  // Each copy holds the original bytes of its segment from the cut on.
  uint64_t total = 0;
  for (auto& p : fixed.moved_to) {
    auto name = p.filename().string(); // seg-<lsn>.wal.from-<offset>.torn
    auto original = before.at(name.substr(0, 28)).substr(std::stoull(name.substr(34)));
    EXPECT_EQ(files::read_file(p).value(), original) << name;
    total += original.size();
  }
  EXPECT_EQ(total, fixed.cut_bytes);
  // The log continues from the cut.
  ASSERT_TRUE(
      repaired.value()->append(lsn{seen.back() + 1}, record_frame(seen.back() + 1)));
  ASSERT_TRUE(repaired.value()->wait_durable(lsn{seen.back() + 1}));
  repaired.value().reset();
  wal_recovery again;
  EXPECT_EQ(replay(again), range(1, seen.back() + 1));
}

namespace {

/// Writes `batches` into a new log, each with one write() and one sync (all
/// its records queued before the one wait_durable that leads the write).
void write_batches(const wal_options& o,
                   const std::vector<std::pair<uint64_t, uint64_t>>& batches) {
  wal_recovery rep;
  auto w = wal::open(
               o, lsn{},
               [](const log_record&) { return result<void>{outcome::success()}; }, rep)
               .value();
  for (auto [from, to] : batches) {
    for (uint64_t l = from; l <= to; ++l)
      ASSERT_TRUE(w->append(lsn{l}, record_frame(l), true));
    ASSERT_TRUE(w->wait_durable(lsn{to}));
  }
  ASSERT_EQ(w->get_stats().syncs, batches.size());
}

/// Offset and decoded record of each frame of a segment's bytes.
std::vector<std::pair<size_t, log_record>> frames_of(std::string_view bytes) {
  std::vector<std::pair<size_t, log_record>> out;
  size_t pos = 0;
  for (;;) {
    auto d = decode_record(bytes.substr(pos));
    if (d.status != decode_status::ok)
      return out;
    out.emplace_back(pos, d.record);
    pos += d.size;
  }
}

} // namespace

// A crash in the middle of a multi-record write: its pages reach the disk in
// any order, so an early record of the write can be damaged while a later one
// survives. None of them was acknowledged (the write's sync never finished):
// a torn tail, cut and kept in lost+found; nothing of an earlier write is lost.
TEST_F(wal_test, damage_followed_only_by_records_of_the_same_write_is_a_torn_tail) {
  for (uint64_t prealloc : {uint64_t{0}, uint64_t{4096}}) {
    for (size_t victim : {0, 2}) { // the write's first record, a middle one
      SCOPED_TRACE("preallocate " + std::to_string(prealloc) + ", victim "
                   + std::to_string(victim));
      fs::remove_all(dir / "log");
      auto o = options();
      o.preallocate_bytes = prealloc;
      // Five writes of one record (synced, acknowledged), then one of five.
      write_batches(o, {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 10}});
      auto seg = segments().back();
      auto original = files::read_file(seg).value();
      auto frames = frames_of(original);
      ASSERT_EQ(frames.size(), 10u);
      for (auto& [at, r] : frames) // the log stamps every frame with its write
        EXPECT_EQ(r.batch_first.value, r.lsn.value <= 5 ? r.lsn.value : 6u)
            << r.lsn.value;
      // The cut starts at the damaged record; records of the write before it
      // are valid and kept (a torn write's prefix, as for any torn tail).
      auto start = frames[5 + victim].first;
      auto bad = original;
      // Two bytes wrong in the body: what a torn write leaves (one flipped
      // bit is rot of a whole record instead, refused: its own test).
      bad[frames[5 + victim].first + record_header_size + 3] ^= 0x10;
      bad[frames[5 + victim].first + record_header_size + 4] ^= 0x01;
      {
        std::ofstream out{seg, std::ios::binary | std::ios::trunc};
        out.write(bad.data(), static_cast<std::streamsize>(bad.size()));
      }
      // lsn 10, the write's last record, is intact.
      ASSERT_EQ(decode_record(std::string_view{bad}.substr(frames[9].first)).status,
                decode_status::ok);
      auto checked = scan_log(dir.path(), {}, [](const log_record&, std::string_view) {
                       return result<void>{outcome::success()};
                     }).value();
      EXPECT_FALSE(checked.fatal) << checked.problem;
      EXPECT_TRUE(checked.ends_early);
      EXPECT_EQ(checked.torn_write_records, 4u - victim);
      wal_recovery rep;
      EXPECT_EQ(replay(rep), range(1, 5 + victim)); // every acknowledged record
      EXPECT_TRUE(rep.tail_cut);
      EXPECT_TRUE(rep.problem.empty()) << rep.problem;
      ASSERT_EQ(rep.moved_to.size(), 1u);
      // The records end here (zeros after them in a preallocated segment).
      auto used = frames[9].first + encode_record(frames[9].second).size();
      EXPECT_EQ(files::read_file(rep.moved_to[0]).value(),
                bad.substr(start, used - start));
      EXPECT_EQ(rep.cut_bytes, used - start);
      EXPECT_EQ(fs::file_size(seg), start);
      // Reopening finds nothing more to cut.
      wal_recovery again;
      EXPECT_EQ(replay(again), range(1, 5 + victim));
      EXPECT_FALSE(again.tail_cut);
    }
  }
}

// The counterpart: a record of a later write after the damage proves the
// damaged write was synced (the log starts a write only after the previous
// one's sync): corruption of acknowledged data, refused, nothing changed.
TEST_F(wal_test, damage_followed_by_a_record_of_a_later_write_refuses_the_open) {
  for (uint64_t prealloc : {uint64_t{0}, uint64_t{4096}}) {
    SCOPED_TRACE("preallocate " + std::to_string(prealloc));
    fs::remove_all(dir / "log");
    auto o = options();
    o.preallocate_bytes = prealloc;
    write_batches(o, {{1, 5}, {6, 10}, {11, 11}});
    auto seg = segments().back();
    auto original = files::read_file(seg).value();
    auto frames = frames_of(original);
    ASSERT_EQ(frames.size(), 11u);
    auto bad = original;
    // lsn 6, first of its write: two bytes wrong (torn-like, not one bit).
    bad[frames[5].first + record_header_size + 3] ^= 0x10;
    bad[frames[5].first + record_header_size + 4] ^= 0x01;
    {
      std::ofstream out{seg, std::ios::binary | std::ios::trunc};
      out.write(bad.data(), static_cast<std::streamsize>(bad.size()));
    }
    auto before = contents();
    wal_recovery rep;
    auto w = wal::open(
        options(), lsn{},
        [](const log_record&) { return result<void>{outcome::success()}; }, rep);
    ASSERT_FALSE(w);
    EXPECT_EQ(code(w.error()), errc::corrupt_data);
    EXPECT_NE(rep.problem.find(seg.filename().string() + " at byte "
                               + std::to_string(frames[5].first)),
              std::string::npos)
        << rep.problem;
    EXPECT_NE(rep.problem.find("lsn 11"), std::string::npos) << rep.problem;
    EXPECT_EQ(contents(), before);
    // A repair drops the rest of the damaged write and the later one.
    auto r = options();
    r.repair = true;
    wal_recovery fixed;
    std::vector<uint64_t> seen;
    ASSERT_TRUE(wal::open(
        r, lsn{},
        [&](const log_record& rec) -> result<void> {
          seen.push_back(rec.lsn.value);
          return outcome::success();
        },
        fixed));
    EXPECT_EQ(seen, range(1, 5));
    EXPECT_EQ(fixed.dropped_records, 5u); // 7..10 and 11
    EXPECT_EQ(fixed.dropped_first, lsn{7});
    EXPECT_EQ(fixed.dropped_last, lsn{11});
  }
}

// Frames without batch_first (a log written before the log stamped them):
// read as before, and damage followed by any valid record is refused.
TEST_F(wal_test, unstamped_frames_are_read_and_damage_before_them_refuses) {
  fs::create_directories(dir / "log");
  std::string bytes;
  std::vector<size_t> at;
  for (uint64_t l = 1; l <= 5; ++l) {
    at.push_back(bytes.size());
    bytes += record_frame(l);
  }
  auto seg = dir / "log" / files::lsn_name("seg-", lsn{1}, ".wal");
  ASSERT_TRUE(files::write_file_synced(seg, bytes, files::default_sync()));
  wal_recovery rep;
  EXPECT_EQ(replay(rep), range(1, 5));
  EXPECT_FALSE(rep.tail_cut);
  bytes[at[1] + record_header_size + 3] ^= 0x10;
  ASSERT_TRUE(files::write_file_synced(seg, bytes, files::default_sync()));
  wal_recovery refused;
  auto w = wal::open(
      options(), lsn{},
      [](const log_record&) { return result<void>{outcome::success()}; }, refused);
  ASSERT_FALSE(w);
  EXPECT_EQ(code(w.error()), errc::corrupt_data);
}

TEST_F(wal_test, a_preallocated_segment_ends_cleanly_at_its_zeros) {
  auto o = options();
  o.preallocate_bytes = 4096;
  write(1, 5, o);
  auto seg = segments().back();
  EXPECT_EQ(fs::file_size(seg), 4096u); // records, then zeros
  auto before = contents();
  wal_recovery rep;
  EXPECT_EQ(replay(rep), range(1, 5));
  EXPECT_FALSE(rep.tail_cut) << rep.cut_reason;
  EXPECT_EQ(contents(), before);
}

TEST_F(wal_test, zeros_inside_the_last_record_are_a_torn_tail) {
  auto o = options();
  o.preallocate_bytes = 4096;
  write(1, 5, o);
  auto seg = segments().back();
  auto original = files::read_file(seg).value();
  auto stored = record_frame(5).size() + batch_trailer_size; // as the log stamps it
  auto start = 5 * stored - stored;                          // frames are equal in size
  std::string zeros(stored - 30, '\0');
  overwrite(seg, start + 30, zeros);
  wal_recovery rep;
  EXPECT_EQ(replay(rep), range(1, 4));
  EXPECT_TRUE(rep.tail_cut);
  ASSERT_EQ(rep.moved_to.size(), 1u);
  auto copy = files::read_file(rep.moved_to[0]).value();
  EXPECT_FALSE(copy.empty());
  EXPECT_EQ(copy, original.substr(start, copy.size()));
  EXPECT_EQ(fs::file_size(seg), start);
}

TEST_F(wal_test, a_partial_record_before_the_zeros_is_a_torn_tail) {
  auto o = options();
  o.preallocate_bytes = 4096;
  write(1, 5, o);
  auto seg = segments().back();
  auto end = 5 * (record_frame(1).size() + batch_trailer_size); // as the log stamps them
  auto half = record_frame(6).substr(0, record_frame(6).size() / 2); // a crash mid-write
  overwrite(seg, end, half);
  wal_recovery rep;
  EXPECT_EQ(replay(rep), range(1, 5));
  EXPECT_TRUE(rep.tail_cut);
  ASSERT_EQ(rep.moved_to.size(), 1u);
  auto copy = files::read_file(rep.moved_to[0]).value();
  EXPECT_FALSE(copy.empty());
  EXPECT_EQ(copy, half.substr(0, copy.size()));
  EXPECT_EQ(fs::file_size(seg), end);
}

TEST_F(wal_test, a_nonzero_byte_after_the_zeros_is_corruption_not_a_clean_end) {
  auto o = options();
  o.preallocate_bytes = 4096;
  {
    // Two segments, the first ended by a roll (as a checkpoint does): zeros.
    wal_recovery rep;
    auto w = wal::open(
                 o, lsn{},
                 [](const log_record&) { return result<void>{outcome::success()}; }, rep)
                 .value();
    for (uint64_t l = 1; l <= 40; ++l) {
      if (l == 21) {
        ASSERT_TRUE(w->roll());
      }
      ASSERT_TRUE(w->append(lsn{l}, record_frame(l)));
    }
    ASSERT_TRUE(w->wait_durable(lsn{40}));
  }
  auto segs = segments();
  ASSERT_EQ(segs.size(), 2u);
  auto scanned = scan_log(dir.path(), {}, [](const log_record&, std::string_view) {
                   return result<void>{outcome::success()};
                 }).value();
  ASSERT_GT(scanned.segments[0].zero_tail, 2u);
  // In the zeros of an earlier segment: valid records follow, so it refuses.
  auto at = scanned.segments[0].bytes - scanned.segments[0].zero_tail / 2;
  overwrite(segs[0], at, "\x5A");
  wal_recovery rep;
  auto w = wal::open(
      options(), lsn{},
      [](const log_record&) { return result<void>{outcome::success()}; }, rep);
  ASSERT_FALSE(w);
  EXPECT_NE(rep.problem.find(segs[0].filename().string()), std::string::npos)
      << rep.problem;
  // In the zeros of the last segment: a torn tail, cut and kept.
  overwrite(segs[0], at, std::string_view{"\0", 1});
  auto last = scanned.segments.back();
  ASSERT_GT(last.zero_tail, 2u);
  overwrite(segs.back(), last.bytes - last.zero_tail / 2, "\x5A");
  wal_recovery tail;
  EXPECT_EQ(replay(tail), range(1, 40));
  EXPECT_TRUE(tail.tail_cut);
  ASSERT_EQ(tail.moved_to.size(), 1u);
  auto copy = files::read_file(tail.moved_to[0]).value();
  EXPECT_EQ(copy.back(), '\x5A');
  EXPECT_TRUE(all_zero(std::string_view{copy}.substr(0, copy.size() - 1)));
}

TEST_F(wal_test, a_failed_sync_is_final) {
  std::atomic<bool> fail{false};
  auto o = options();
  o.sync = [&](int fd) {
    if (fail) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  wal_recovery rep;
  auto w = wal::open(
               o, lsn{},
               [](const log_record&) { return result<void>{outcome::success()}; }, rep)
               .value();
  std::atomic<int> errors{0};
  w->on_durable([&](lsn, std::error_code e) {
    if (e)
      ++errors;
  });
  ASSERT_TRUE(w->append(lsn{1}, record_frame(1)));
  ASSERT_TRUE(w->wait_durable(lsn{1}));
  fail = true;
  ASSERT_TRUE(w->append(lsn{2}, record_frame(2)));
  EXPECT_EQ(code(w->wait_durable(lsn{2}).error()), errc::io_failure);
  EXPECT_EQ(w->durable_lsn(), lsn{1});
  EXPECT_EQ(code(w->append(lsn{3}, record_frame(3)).error()), errc::store_failed);
  EXPECT_TRUE(w->failure());
  // The callback runs on the thread that led the failed sync (the writer
  // thread, or this one in wait_durable).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (errors.load() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  w.reset(); // joins the writer: no more callbacks
  EXPECT_EQ(errors.load(), 1);
}

TEST_F(wal_test, roll_and_truncate_drop_only_covered_segments) {
  wal_recovery rep;
  auto w = wal::open(
               options(), lsn{},
               [](const log_record&) { return result<void>{outcome::success()}; }, rep)
               .value();
  for (uint64_t l = 1; l <= 10; ++l) {
    if (l == 4 || l == 8) {
      ASSERT_TRUE(w->roll());
    }
    ASSERT_TRUE(w->append(lsn{l}, record_frame(l)));
  }
  ASSERT_TRUE(w->wait_durable(lsn{10}));
  ASSERT_EQ(w->segments().size(), 3u); // 1-3, 4-7, 8-10
  ASSERT_TRUE(w->truncate_through(lsn{5}));
  EXPECT_EQ(w->segments().size(), 2u); // 4-7 still holds 6 and 7
  ASSERT_TRUE(w->truncate_through(lsn{10}));
  EXPECT_EQ(w->segments().size(), 1u); // never the current one
  w.reset();
  wal_recovery again;
  EXPECT_EQ(replay(again, lsn{7}), range(8, 10));
}

TEST_F(wal_test, checkpoint_files_are_written_atomically_and_checked) {
  auto sync = files::default_sync();
  ASSERT_TRUE(write_checkpoint(dir.path(), lsn{10}, "image-10", sync));
  ASSERT_TRUE(write_checkpoint(dir.path(), lsn{20}, "image-20", sync));
  // A leftover of an interrupted write is removed by the next one.
  { std::ofstream{dir / "checkpoints" / "ckpt-x.ckpt.tmp"} << "partial"; }
  ASSERT_TRUE(write_checkpoint(dir.path(), lsn{30}, "image-30", sync));
  EXPECT_FALSE(fs::exists(dir / "checkpoints" / "ckpt-x.ckpt.tmp"));
  auto files = list_checkpoints(dir.path());
  ASSERT_EQ(files.size(), 2u); // the newest two
  EXPECT_EQ(read_checkpoint(files[0]).value().image, "image-30");
  EXPECT_EQ(read_checkpoint(files[1]).value().at, lsn{20});
  {
    std::fstream f{files[0], std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(-2, std::ios::end);
    f.put('#');
  }
  EXPECT_EQ(code(read_checkpoint(files[0]).error()), errc::corrupt_data);
  EXPECT_EQ(read_checkpoint(files[1]).value().image, "image-20");
  fs::resize_file(files[1], 10);
  EXPECT_EQ(code(read_checkpoint(files[1]).error()), errc::corrupt_data);
}
