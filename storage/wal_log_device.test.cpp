// The replica's file log device alone: append/sync/recover across reopen,
// group commit, truncate_after inside a segment and across segments (the
// files hold exactly the prefix when it returns, and what it moved aside holds
// only records after the cut), the store's recovery rules (corruption in the
// middle refuses to open and changes nothing, a torn tail is moved aside), a
// failed sync, and a bounded random attack of truncation points and byte
// flips.
#include "storage/wal_log_device.hpp"

#include "storage/file_util.hpp"
#include "storage/log_scan.hpp"
#include "tests/support/log_device_sync.hpp"
#include "tests/support/store_errc.hpp"
#include "tests/support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <thread>

using namespace conclave::store;
using conclave::storage::open_replica_log;
using conclave::storage::replica_log_options;
using conclave::storage::wal_log_device;
namespace fs = std::filesystem;

using conclave::test::code;
using conclave::test::sync_and_wait;

namespace {

log_record record(uint64_t l, size_t value_bytes = 40) {
  log_record r;
  r.lsn = lsn{l};
  r.term = term{1 + l / 7};
  r.txn = txn_id{l};
  r.ops.push_back({op_kind::put, 0, "key" + std::to_string(l),
                   std::string(value_bytes, static_cast<char>('a' + l % 26))});
  return r;
}

/// The identity of a record as the tests compare it.
std::string digest(const log_record& r) {
  return std::to_string(r.lsn.value) + "/" + std::to_string(r.term.value) + "/"
         + (r.ops.empty() ? "" : r.ops[0].key + "=" + r.ops[0].value);
}

std::vector<std::string> digests(const std::vector<log_record>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs)
    out.push_back(digest(r));
  return out;
}

std::vector<std::string> expected(uint64_t from, uint64_t to, size_t value_bytes = 40) {
  std::vector<std::string> out;
  for (auto l = from; l <= to; ++l)
    out.push_back(digest(record(l, value_bytes)));
  return out;
}

/// Records in the segment files of dir/log as they are on disk now (read
/// only), or corrupt_data if the scan finds the log damaged.
result<std::vector<log_record>> on_disk(const fs::path& dir) {
  std::vector<log_record> out;
  auto s = scan_log(dir, {}, [&](const log_record& r, std::string_view) -> result<void> {
    out.push_back(r);
    return outcome::success();
  });
  if (!s)
    return s.error();
  if (s.value().fatal || s.value().ends_early)
    return errc::corrupt_data;
  return out;
}

/// Every record in the files of `sub` (dir/log/truncated, lost+found).
std::vector<log_record> records_in(const fs::path& sub) {
  std::vector<log_record> out;
  std::error_code ec;
  if (!fs::exists(sub, ec))
    return out;
  for (auto& e : fs::directory_iterator(sub)) {
    auto bytes = files::read_file(e.path()).value();
    size_t pos = 0;
    while (pos < bytes.size()) {
      auto d = decode_record(std::string_view{bytes}.substr(pos));
      if (d.status != decode_status::ok)
        break;
      out.push_back(d.record);
      pos += d.size;
    }
  }
  return out;
}

std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "LOCK")
      out[fs::relative(e.path(), dir).string()] = files::read_file(e.path()).value();
  return out;
}

std::vector<fs::path> segment_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(dir / "log"))
    if (e.is_regular_file())
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class wal_log_device_test : public testing::Test {
protected:
  replica_log_options options() {
    replica_log_options o;
    o.dir = dir.path() / "replica";
    o.segment_bytes = segment_bytes;
    o.preallocate_bytes = preallocate_bytes;
    return o;
  }

  std::shared_ptr<wal_log_device> open_device() {
    wal_recovery rep;
    auto d = wal_log_device::open(options(), rep);
    EXPECT_TRUE(d) << (d ? "" : d.error().message() + ": " + rep.problem);
    return d ? d.value() : nullptr;
  }

  /// Appends [from, to] and syncs each record on its own (one write each).
  void write_each(wal_log_device& d, uint64_t from, uint64_t to) {
    for (auto l = from; l <= to; ++l) {
      ASSERT_TRUE(d.append(record(l)));
      auto s = sync_and_wait(d);
      ASSERT_TRUE(s);
      ASSERT_EQ(s.value(), lsn{l});
    }
  }

  std::vector<std::string> recovered_digests() {
    auto d = open_device();
    if (!d)
      return {};
    auto r = d->recover();
    EXPECT_TRUE(r);
    return r ? digests(r.value().records) : std::vector<std::string>{};
  }

  conclave::test::temp_dir dir{"replica-log"};
  uint64_t segment_bytes = 64u << 20;
  uint64_t preallocate_bytes = 4096;
};

} // namespace

TEST_F(wal_log_device_test, synced_records_are_recovered_in_lsn_order_after_reopen) {
  {
    auto d = open_device();
    ASSERT_TRUE(d);
    auto first = d->recover();
    ASSERT_TRUE(first);
    EXPECT_TRUE(first.value().records.empty());
    EXPECT_TRUE(first.value().checkpoint.empty());
    for (uint64_t l = 1; l <= 50; ++l)
      ASSERT_TRUE(d->append(record(l)));
    auto s = sync_and_wait(*d);
    ASSERT_TRUE(s);
    EXPECT_EQ(s.value(), lsn{50});
    EXPECT_EQ(d->durable_lsn(), lsn{50});
    // A device in use reads its records back from the files too.
    auto again = d->recover();
    ASSERT_TRUE(again);
    EXPECT_EQ(digests(again.value().records), expected(1, 50));
  }
  EXPECT_EQ(recovered_digests(), expected(1, 50));
  // The log goes on after a reopen.
  {
    auto d = open_device();
    ASSERT_TRUE(d);
    EXPECT_EQ(d->appended_lsn(), lsn{50});
    EXPECT_EQ(code(d->append(record(52)).error()), errc::bad_argument); // a gap
    write_each(*d, 51, 60);
  }
  EXPECT_EQ(recovered_digests(), expected(1, 60));
}

TEST_F(wal_log_device_test,
       the_factory_creates_the_directory_and_keeps_a_second_opener_out) {
  auto where = dir.path() / "a" / "b";
  auto d = open_replica_log(where);
  ASSERT_TRUE(d) << d.error().message();
  EXPECT_TRUE(fs::is_directory(where / "log"));
  auto second = open_replica_log(where);
  ASSERT_FALSE(second);
  EXPECT_EQ(code(second.error()), errc::directory_in_use);
  // A checkpoint past the durable log is refused.
  EXPECT_EQ(code(d.value()->checkpoint("image", lsn{5}).error()), errc::bad_argument);
}

TEST_F(wal_log_device_test, syncs_requested_while_one_is_in_flight_share_the_next_one) {
  // The first fdatasync blocks until the test lets it go; meanwhile more
  // records and syncs arrive.
  std::mutex m;
  std::condition_variable cv;
  bool blocked = false, released = false;
  auto o = options();
  o.sync = [&](int fd) {
    std::unique_lock<std::mutex> lk{m};
    if (!blocked) {
      blocked = true;
      cv.notify_all();
      cv.wait(lk, [&] { return released; });
    }
    return ::fdatasync(fd);
  };
  wal_recovery rep;
  auto d = wal_log_device::open(o, rep).value();
  std::mutex done_m;
  std::vector<lsn> done;
  auto on_done = [&](result<lsn> r) {
    ASSERT_TRUE(r);
    std::lock_guard<std::mutex> g{done_m};
    done.push_back(r.value());
  };
  ASSERT_TRUE(d->append(record(1)));
  d->sync(on_done);
  {
    std::unique_lock<std::mutex> lk{m};
    cv.wait(lk, [&] { return blocked; });
  }
  auto syncs_before = d->syncs();
  for (uint64_t l = 2; l <= 40; ++l) {
    ASSERT_TRUE(d->append(record(l)));
    d->sync(on_done);
  }
  {
    // Nothing is durable yet, so nothing may be reported durable.
    std::lock_guard<std::mutex> g{done_m};
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(d->durable_lsn(), lsn{});
  }
  {
    std::lock_guard<std::mutex> lk{m};
    released = true;
  }
  cv.notify_all();
  auto last = sync_and_wait(*d);
  ASSERT_TRUE(last);
  EXPECT_EQ(last.value(), lsn{40});
  std::lock_guard<std::mutex> g{done_m};
  ASSERT_EQ(done.size(), 40u);
  for (size_t i = 0; i < done.size(); ++i)
    EXPECT_EQ(done[i], lsn{i + 1}); // each reports what was appended before it
  // 39 syncs requested while the first was blocked: at most two more syncs
  // (one took whatever was queued when the writer woke, one the rest).
  EXPECT_LE(d->syncs() - syncs_before, 3u);
}

TEST_F(wal_log_device_test,
       truncate_after_leaves_exactly_the_prefix_on_disk_when_it_returns) {
  auto d = open_device();
  ASSERT_TRUE(d);
  for (uint64_t l = 1; l <= 30; ++l)
    ASSERT_TRUE(d->append(record(l)));
  // Records 21..30 may still be queued: the truncation waits for them.
  ASSERT_TRUE(d->truncate_after(lsn{20}));
  EXPECT_EQ(d->appended_lsn(), lsn{20});
  // A crash now (read the files as they are, device still open) finds 1..20.
  auto files_now = on_disk(options().dir);
  ASSERT_TRUE(files_now);
  EXPECT_EQ(digests(files_now.value()), expected(1, 20));
  // What was moved aside holds only records after the cut.
  auto moved = records_in(options().dir / "log" / "truncated");
  ASSERT_EQ(moved.size(), 10u);
  for (auto& r : moved)
    EXPECT_GT(r.lsn, lsn{20});
  // A sync after the truncation reports the new end; the log continues at 21.
  auto s = sync_and_wait(*d);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.value(), lsn{20});
  EXPECT_EQ(code(d->append(record(31)).error()), errc::bad_argument);
  auto other = record(21, 99);
  ASSERT_TRUE(d->append(other));
  ASSERT_TRUE(sync_and_wait(*d));
  // Truncating at or past the end changes nothing.
  ASSERT_TRUE(d->truncate_after(lsn{21}));
  ASSERT_TRUE(d->truncate_after(lsn{500}));
  EXPECT_EQ(d->truncations(), 1u);
  d.reset();
  auto want = expected(1, 20);
  want.push_back(digest(other));
  EXPECT_EQ(recovered_digests(), want);
}

TEST_F(wal_log_device_test, truncate_across_segments_moves_later_segments_newest_first) {
  segment_bytes = 300; // a few records per segment
  auto d = open_device();
  ASSERT_TRUE(d);
  write_each(*d, 1, 40);
  auto segs_before = segment_files(options().dir);
  ASSERT_GT(segs_before.size(), 5u);
  ASSERT_TRUE(d->truncate_after(lsn{9}));
  auto files_now = on_disk(options().dir);
  ASSERT_TRUE(files_now);
  EXPECT_EQ(digests(files_now.value()), expected(1, 9));
  EXPECT_LT(segment_files(options().dir).size(), segs_before.size());
  auto moved = records_in(options().dir / "log" / "truncated");
  std::set<uint64_t> moved_lsns;
  for (auto& r : moved) {
    EXPECT_GT(r.lsn, lsn{9});
    moved_lsns.insert(r.lsn.value);
  }
  EXPECT_EQ(moved_lsns.size(), 31u); // every dropped record kept, none twice
  // Down to nothing, then a new log.
  ASSERT_TRUE(d->truncate_after(lsn{0}));
  EXPECT_TRUE(on_disk(options().dir).value().empty());
  write_each(*d, 1, 3);
  d.reset();
  EXPECT_EQ(recovered_digests(), expected(1, 3));
}

// A crash at any step of a truncation (simulated: the k-th fdatasync from the
// truncation's start fails, which stops the device there) leaves a log that
// opens and holds a prefix: the records up to the cut, or more of them, never
// a hole and never damage.
TEST_F(wal_log_device_test, a_truncation_stopped_at_any_sync_leaves_a_prefix) {
  segment_bytes = 600; // five records per segment
  for (int k = 0;; ++k) {
    SCOPED_TRACE("failing sync " + std::to_string(k));
    fs::remove_all(options().dir);
    std::atomic<int> countdown{-1}; // < 0: never fail
    auto o = options();
    o.sync = [&](int fd) {
      if (countdown.load() == 0) {
        errno = EIO;
        return -1;
      }
      if (countdown.load() > 0)
        --countdown;
      return ::fdatasync(fd);
    };
    bool done = false;
    {
      wal_recovery rep;
      auto d = wal_log_device::open(o, rep).value();
      for (uint64_t l = 1; l <= 30; ++l)
        ASSERT_TRUE(d->append(record(l)));
      ASSERT_TRUE(sync_and_wait(*d));
      countdown = k;
      done = static_cast<bool>(d->truncate_after(lsn{9}));
    }
    auto now = on_disk(options().dir);
    ASSERT_TRUE(now);
    auto got = digests(now.value());
    ASSERT_GE(got.size(), 9u);
    ASSERT_EQ(got, expected(1, got.size()));
    if (done) {
      EXPECT_EQ(got.size(), 9u);
      EXPECT_GT(k, 5); // each of the moves, the cut and the reopen was stopped once
      break;
    }
    auto reopened = recovered_digests();
    ASSERT_EQ(reopened, got);
    ASSERT_LT(k, 100);
  }
}

TEST_F(wal_log_device_test,
       a_flipped_byte_before_valid_records_refuses_to_open_and_changes_nothing) {
  segment_bytes = 300;
  {
    auto d = open_device();
    ASSERT_TRUE(d);
    write_each(*d, 1, 30);
  }
  auto segs = segment_files(options().dir);
  ASSERT_GT(segs.size(), 3u);
  {
    std::fstream f{segs[1], std::ios::in | std::ios::out | std::ios::binary};
    f.seekg(40);
    char c = 0;
    f.get(c);
    f.seekp(40);
    f.put(static_cast<char>(c ^ 0x10));
  }
  auto before = contents(options().dir);
  wal_recovery rep;
  auto d = wal_log_device::open(options(), rep);
  ASSERT_FALSE(d);
  EXPECT_EQ(code(d.error()), errc::corrupt_data);
  EXPECT_NE(rep.problem.find(segs[1].filename().string() + " at byte 0"),
            std::string::npos)
      << rep.problem;
  EXPECT_EQ(contents(options().dir), before);
  // The plain factory refuses the same way.
  auto plain = open_replica_log(options().dir);
  ASSERT_FALSE(plain);
  EXPECT_EQ(code(plain.error()), errc::corrupt_data);
  EXPECT_EQ(contents(options().dir), before);
}

TEST_F(wal_log_device_test, a_torn_tail_is_cut_and_moved_aside) {
  {
    auto d = open_device();
    ASSERT_TRUE(d);
    write_each(*d, 1, 10);
  }
  auto seg = segment_files(options().dir).back();
  auto bytes = files::read_file(seg).value();
  // The last record loses its second half, as a crash before its sync can do.
  auto last_frame = encode_record(record(10));
  stamp_batch(last_frame, lsn{10});
  auto end = bytes.find(last_frame);
  ASSERT_NE(end, std::string::npos);
  std::string torn = bytes.substr(0, end + last_frame.size() / 2);
  ASSERT_TRUE(files::write_file_synced(seg, torn, files::default_sync()));
  wal_recovery rep;
  auto d = wal_log_device::open(options(), rep);
  ASSERT_TRUE(d) << rep.problem;
  EXPECT_TRUE(rep.tail_cut);
  ASSERT_EQ(rep.moved_to.size(), 1u);
  EXPECT_EQ(files::read_file(rep.moved_to[0]).value(), torn.substr(end));
  auto r = d.value()->recover();
  ASSERT_TRUE(r);
  EXPECT_EQ(digests(r.value().records), expected(1, 9));
  EXPECT_EQ(d.value()->appended_lsn(), lsn{9});
}

TEST_F(wal_log_device_test, a_failed_sync_is_final) {
  std::atomic<bool> failing{false};
  auto o = options();
  o.sync = [&](int fd) {
    if (failing) {
      errno = EIO;
      return -1;
    }
    return ::fdatasync(fd);
  };
  wal_recovery rep;
  auto d = wal_log_device::open(o, rep).value();
  ASSERT_TRUE(d->append(record(1)));
  ASSERT_TRUE(sync_and_wait(*d));
  failing = true;
  ASSERT_TRUE(d->append(record(2)));
  auto s = sync_and_wait(*d);
  ASSERT_FALSE(s);
  EXPECT_EQ(code(s.error()), errc::io_failure);
  failing = false; // a later success changes nothing
  EXPECT_FALSE(d->append(record(3)));
  EXPECT_FALSE(sync_and_wait(*d));
  EXPECT_FALSE(d->truncate_after(lsn{1}));
  EXPECT_FALSE(d->recover());
}

// Random truncation points and random byte flips, bounded. Each round writes
// records one write each (each synced), then either truncates at a random
// point and checks the files, the moved bytes and a reopen; or flips one
// random byte of one segment and checks that the open refuses unless the
// flip hit the last record (a torn tail: cut, the rest kept) or the zeros
// after it in the last segment (damage at the end: moved aside, nothing
// lost); zeros of an earlier segment are followed by valid records.
TEST_F(wal_log_device_test, random_truncations_and_byte_flips_keep_exactly_a_prefix) {
  std::mt19937_64 rng{20261123};
  auto started = std::chrono::steady_clock::now();
  int rounds = 0;
  for (; rounds < 60; ++rounds) {
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(15))
      break;
    SCOPED_TRACE("round " + std::to_string(rounds));
    fs::remove_all(options().dir);
    segment_bytes = 200 + rng() % 600;
    preallocate_bytes = rng() % 2 == 0 ? 0 : 256;
    uint64_t n = 5 + rng() % 25;
    auto d = open_device();
    ASSERT_TRUE(d);
    write_each(*d, 1, n);
    if (rng() % 2 == 0) {
      uint64_t at = rng() % (n + 1);
      ASSERT_TRUE(d->truncate_after(lsn{at}));
      auto now = on_disk(options().dir);
      ASSERT_TRUE(now);
      ASSERT_EQ(digests(now.value()), expected(1, at));
      for (auto& r : records_in(options().dir / "log" / "truncated"))
        ASSERT_GT(r.lsn, lsn{at});
      uint64_t more = rng() % 5;
      write_each(*d, at + 1, at + more);
      d.reset();
      ASSERT_EQ(recovered_digests(), expected(1, at + more));
      continue;
    }
    d.reset();
    // Where each record sits, to tell what a flip hit.
    auto segs = segment_files(options().dir);
    auto victim = segs[rng() % segs.size()];
    auto bytes = files::read_file(victim).value();
    if (bytes.empty())
      continue;
    size_t at = rng() % bytes.size();
    uint64_t hit = 0; // lsn of the record holding byte `at`; 0: the zeros
    {
      size_t pos = 0;
      while (pos < bytes.size()) {
        auto dr = decode_record(std::string_view{bytes}.substr(pos));
        if (dr.status != decode_status::ok)
          break;
        if (at < pos + dr.size)
          hit = dr.record.lsn.value;
        pos += dr.size;
        if (hit)
          break;
      }
    }
    bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng() % 255));
    ASSERT_TRUE(files::write_file_synced(victim, bytes, files::default_sync()));
    auto before = contents(options().dir);
    wal_recovery rep;
    auto reopened = wal_log_device::open(options(), rep);
    bool in_last_segment = victim == segs.back();
    if ((hit != 0 && hit < n) || (hit == 0 && !in_last_segment)) {
      // A synced record, or the zeros of an earlier segment, followed by
      // later writes: refuse, name the file, touch nothing.
      ASSERT_FALSE(reopened) << "flip at " << at << " of " << victim << " (lsn " << hit
                             << ")";
      ASSERT_EQ(code(reopened.error()), errc::corrupt_data);
      ASSERT_NE(rep.problem.find(victim.filename().string()), std::string::npos)
          << rep.problem;
      ASSERT_EQ(contents(options().dir), before);
      continue;
    }
    ASSERT_TRUE(reopened) << rep.problem;
    auto r = reopened.value()->recover();
    ASSERT_TRUE(r);
    ASSERT_EQ(digests(r.value().records), expected(1, hit == n ? n - 1 : n));
    ASSERT_TRUE(rep.tail_cut);
  }
  EXPECT_GE(rounds, 20);
}

TEST_F(wal_log_device_test, without_a_writer_thread_syncs_complete_only_when_pumped) {
  auto o = options();
  o.writer_thread = false;
  {
    wal_recovery rep;
    auto d = wal_log_device::open(o, rep);
    ASSERT_TRUE(d);
    auto& dev = *d.value();
    for (uint64_t l = 1; l <= 5; ++l)
      ASSERT_TRUE(dev.append(record(l)));
    std::vector<lsn> done;
    dev.sync([&](result<lsn> r) {
      ASSERT_TRUE(r);
      done.push_back(r.value());
    });
    // Nobody writes: no thread, no pump yet.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(done.empty());
    EXPECT_EQ(dev.durable_lsn(), lsn{});
    EXPECT_EQ(on_disk(o.dir).value().size(), 0u);
    dev.pump();
    ASSERT_EQ(done.size(), 1u); // on this thread, before pump returns
    EXPECT_EQ(done[0], lsn{5});
    EXPECT_EQ(dev.durable_lsn(), lsn{5});
    // Appended and never pumped: the close writes and syncs it.
    ASSERT_TRUE(dev.append(record(6)));
    dev.pump();
    ASSERT_TRUE(dev.append(record(7)));
  }
  EXPECT_EQ(recovered_digests(), expected(1, 7));
}
