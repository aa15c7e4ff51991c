// Checkpoints and snapshot installs of the replica's file log device: a
// checkpoint deletes only segments whose records it covers and a reopen
// recovers checkpoint + log after it; a checkpoint file with any byte flipped
// or cut refuses to open with the file named (never read as "no checkpoint");
// an install replaces checkpoint and log, and one interrupted by a crash
// leaves the old state (before its commit point) or the new one (after it),
// never a mix.
#include "storage/wal_log_device.hpp"

#include "storage/checkpoint_file.hpp"
#include "storage/file_util.hpp"
#include "tests/support/log_device_sync.hpp"
#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <set>

using namespace conclave::store;
using conclave::storage::replica_log_options;
using conclave::storage::wal_log_device;
namespace fs = std::filesystem;

using conclave::test::code;
using conclave::test::sync_and_wait;

namespace {

/// Record `l`, all in term 1.
log_record term1_record(uint64_t l) {
  log_record r;
  r.lsn = lsn{l};
  r.term = term{1};
  r.txn = txn_id{l};
  r.ops.push_back({op_kind::put, 0, "key" + std::to_string(l), std::string(40, 'v')});
  return r;
}

std::vector<uint64_t> lsns(const std::vector<log_record>& rs) {
  std::vector<uint64_t> out;
  for (auto& r : rs)
    out.push_back(r.lsn.value);
  return out;
}

std::vector<uint64_t> range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> out;
  for (auto l = from; l <= to; ++l)
    out.push_back(l);
  return out;
}

/// lsns of every record in the segment files of dir/log (not the subfolders).
std::set<uint64_t> lsns_in_segments(const fs::path& dir) {
  std::set<uint64_t> out;
  for (auto& e : fs::directory_iterator(dir / "log")) {
    if (!e.is_regular_file())
      continue;
    auto bytes = files::read_file(e.path()).value();
    size_t pos = 0;
    while (pos < bytes.size()) {
      auto d = decode_record(std::string_view{bytes}.substr(pos));
      if (d.status != decode_status::ok)
        break;
      out.insert(d.record.lsn.value);
      pos += d.size;
    }
  }
  return out;
}

class wal_checkpoint_test : public ::testing::Test {
protected:
  result<std::shared_ptr<wal_log_device>> open() {
    replica_log_options o;
    o.dir = dir.path();
    o.segment_bytes = 600; // a few records per segment
    o.preallocate_bytes = 0;
    report = {};
    return wal_log_device::open(o, report);
  }

  void fill(wal_log_device& d, uint64_t from, uint64_t to) {
    for (auto l = from; l <= to; ++l)
      ASSERT_TRUE(d.append(term1_record(l)));
    auto s = sync_and_wait(d);
    ASSERT_TRUE(s);
    ASSERT_EQ(s.value(), lsn{to});
  }

  conclave::test::temp_dir dir{"replica-ckpt"};
  wal_recovery report;
};

TEST_F(wal_checkpoint_test,
       checkpoint_deletes_only_covered_segments_and_reopen_recovers) {
  {
    auto d = open();
    ASSERT_TRUE(d);
    fill(*d.value(), 1, 40);
    ASSERT_TRUE(d.value()->checkpoint("IMAGE-20", lsn{20}));
    fill(*d.value(), 41, 50);
    ASSERT_TRUE(d.value()->checkpoint("IMAGE-45", lsn{45}));
    fill(*d.value(), 51, 55);
    // Every record after the newest checkpoint is still in a segment; some
    // segments it covers are gone.
    auto on_disk = lsns_in_segments(dir.path());
    for (uint64_t l = 46; l <= 55; ++l)
      EXPECT_TRUE(on_disk.count(l)) << l;
    EXPECT_FALSE(on_disk.count(1));
  }
  auto d = open();
  ASSERT_TRUE(d) << report.problem;
  EXPECT_EQ(d.value()->checkpoint_lsn(), lsn{45});
  auto rec = d.value()->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec.value().checkpoint, "IMAGE-45");
  EXPECT_EQ(lsns(rec.value().records), range(46, 55));
  // A second recover() reads the files again and finds the same.
  auto again = d.value()->recover();
  ASSERT_TRUE(again);
  EXPECT_EQ(again.value().checkpoint, "IMAGE-45");
  EXPECT_EQ(lsns(again.value().records), range(46, 55));
  // Truncating back to the checkpoint's lsn works; below it does not.
  ASSERT_TRUE(d.value()->truncate_after(lsn{45}));
  fill(*d.value(), 46, 47);
}

TEST_F(wal_checkpoint_test,
       damage_among_covered_records_stops_neither_the_open_nor_a_truncation) {
  // One segment holds records 1..30; a checkpoint covers 1..20. A flipped
  // bit in a covered record loses nothing (recovery reads past it), and a
  // truncation after a later record must find that record past the damage
  // too: a truncation that gave up there failed the replica for good.
  auto seg_of = [&] {
    for (auto& e : fs::directory_iterator(dir.path() / "log"))
      if (e.is_regular_file())
        return e.path();
    return fs::path{};
  };
  for (uint64_t damaged : {1u, 7u, 20u}) {
    for (uint64_t cut_after : {21u, 25u, 29u}) {
      fs::remove_all(dir.path());
      fs::create_directories(dir.path());
      {
        replica_log_options o;
        o.dir = dir.path();
        o.segment_bytes = 1 << 20;
        o.preallocate_bytes = 0;
        auto d = wal_log_device::open(o, report);
        ASSERT_TRUE(d);
        fill(*d.value(), 1, 30);
        ASSERT_TRUE(d.value()->checkpoint("IMAGE-20", lsn{20}));
      }
      // Flip one bit in the middle of record `damaged`'s frame.
      auto path = seg_of();
      auto bytes = files::read_file(path).value();
      size_t pos = 0, at = 0, size = 0;
      while (pos < bytes.size()) {
        auto d = decode_record(std::string_view{bytes}.substr(pos));
        ASSERT_EQ(d.status, decode_status::ok);
        if (d.record.lsn == lsn{damaged}) {
          at = pos;
          size = d.size;
        }
        pos += d.size;
      }
      ASSERT_GT(size, 0u);
      bytes[at + size / 2] = static_cast<char>(bytes[at + size / 2] ^ 0x10);
      {
        std::ofstream out{path, std::ios::binary | std::ios::trunc};
        out << bytes;
      }
      replica_log_options o;
      o.dir = dir.path();
      o.segment_bytes = 1 << 20;
      o.preallocate_bytes = 0;
      auto d = wal_log_device::open(o, report);
      ASSERT_TRUE(d) << "damaged " << damaged << ": " << report.problem;
      auto rec = d.value()->recover();
      ASSERT_TRUE(rec);
      EXPECT_EQ(lsns(rec.value().records), range(21, 30));
      auto t = d.value()->truncate_after(lsn{cut_after});
      ASSERT_TRUE(t) << "damaged " << damaged << ", truncate after " << cut_after << ": "
                     << t.error().message();
      rec = d.value()->recover();
      ASSERT_TRUE(rec);
      EXPECT_EQ(lsns(rec.value().records), range(21, cut_after));
      fill(*d.value(), cut_after + 1, cut_after + 2);
      // The damaged covered bytes are still there: nothing was "repaired".
      auto now = files::read_file(path).value();
      ASSERT_GT(now.size(), at + size);
      EXPECT_EQ(now.substr(at, size), bytes.substr(at, size));
    }
  }
}

TEST_F(wal_checkpoint_test, a_checkpoint_not_yet_durable_is_refused) {
  auto d = open();
  ASSERT_TRUE(d);
  fill(*d.value(), 1, 5);
  auto r = d.value()->checkpoint("IMAGE", lsn{6});
  ASSERT_FALSE(r);
  EXPECT_EQ(code(r.error()), errc::bad_argument);
}

TEST_F(wal_checkpoint_test, every_flipped_byte_or_cut_of_the_checkpoint_refuses_to_open) {
  {
    auto d = open();
    ASSERT_TRUE(d);
    fill(*d.value(), 1, 12);
    ASSERT_TRUE(d.value()->checkpoint("the state at ten", lsn{10}));
  }
  auto file = list_checkpoints(dir.path()).front();
  auto good = files::read_file(file).value();
  auto write = [&](const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
  };
  auto expect_refused = [&](const std::string& what) {
    auto d = open();
    EXPECT_FALSE(d) << what;
    if (!d) {
      EXPECT_EQ(code(d.error()), errc::corrupt_data) << what;
      EXPECT_NE(report.problem.find(file.filename().string()), std::string::npos)
          << what << ": " << report.problem;
    }
    EXPECT_TRUE(fs::exists(file)) << what; // left in place for the operator
  };
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    write(bad);
    expect_refused("byte " + std::to_string(i) + " flipped");
  }
  for (size_t n = 0; n < good.size(); ++n) {
    write(good.substr(0, n));
    expect_refused("cut to " + std::to_string(n) + " bytes");
  }
  write(good);
  auto d = open();
  ASSERT_TRUE(d) << report.problem;
  EXPECT_EQ(d.value()->recover().value().checkpoint, "the state at ten");
}

TEST_F(wal_checkpoint_test, install_replaces_checkpoint_and_log_and_keeps_the_old_aside) {
  {
    auto d = open();
    ASSERT_TRUE(d);
    fill(*d.value(), 1, 30);
    ASSERT_TRUE(d.value()->checkpoint("OLD", lsn{10}));
    ASSERT_TRUE(d.value()->install_snapshot("NEW", lsn{100}));
    auto rec = d.value()->recover();
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec.value().checkpoint, "NEW");
    EXPECT_TRUE(rec.value().records.empty());
    fill(*d.value(), 101, 105);
  }
  auto d = open();
  ASSERT_TRUE(d) << report.problem;
  auto rec = d.value()->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec.value().checkpoint, "NEW");
  EXPECT_EQ(lsns(rec.value().records), range(101, 105));
  // Nothing of the old history was deleted: it is under log/replaced.
  EXPECT_TRUE(fs::is_directory(dir.path() / "log" / "replaced"));
  EXPECT_FALSE(fs::exists(dir.path() / "install"));
}

TEST_F(wal_checkpoint_test, an_install_cut_by_a_crash_leaves_the_old_state_or_the_new) {
  {
    auto d = open();
    ASSERT_TRUE(d);
    fill(*d.value(), 1, 30);
    ASSERT_TRUE(d.value()->checkpoint("OLD", lsn{10}));
  }
  auto sync = files::default_sync();
  // Before the commit point: only the install's temp file exists.
  fs::create_directories(dir.path() / "install" / "checkpoints");
  {
    std::ofstream tmp(dir.path() / "install" / "checkpoints"
                          / "ckpt-00000000000000000100.ckpt.tmp",
                      std::ios::binary);
    tmp << "half of an image";
  }
  {
    auto d = open();
    ASSERT_TRUE(d) << report.problem;
    auto rec = d.value()->recover();
    EXPECT_EQ(rec.value().checkpoint, "OLD");
    EXPECT_EQ(lsns(rec.value().records), range(11, 30));
    EXPECT_FALSE(fs::exists(dir.path() / "install"));
  }
  // After the commit point (the image durable under install/), before the
  // old log was moved aside: the open finishes the install.
  ASSERT_TRUE(write_checkpoint(dir.path() / "install", lsn{100}, "NEW", sync));
  {
    auto d = open();
    ASSERT_TRUE(d) << report.problem;
    auto rec = d.value()->recover();
    EXPECT_EQ(rec.value().checkpoint, "NEW");
    EXPECT_TRUE(rec.value().records.empty());
    fill(*d.value(), 101, 102);
  }
  // Opened again: the finished install stays as it is.
  {
    auto d = open();
    ASSERT_TRUE(d);
    EXPECT_EQ(lsns(d.value()->recover().value().records), range(101, 102));
  }
}

} // namespace
