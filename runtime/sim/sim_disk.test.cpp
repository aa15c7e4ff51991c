// The replication workload's simulated disk, by plain calls (no releaser: the
// test delivers the releases itself): a stall holds every sync until it ends,
// those asked for during it and those under way when it began; a crash drops
// what was not synced, and the syncs it interrupted never complete, stall or
// not.
#include "runtime/sim/sim_disk.hpp"

#include <gtest/gtest.h>

#include <vector>

using conclave::sim::sim_disk;
namespace store = conclave::store;

namespace {

store::log_record record(uint64_t lsn) {
  store::log_record r;
  r.lsn = store::lsn{lsn};
  return r;
}

/// Collects what the syncs report.
struct syncs {
  std::vector<uint64_t> done;
  store::log_device::sync_callback next() {
    return
        [this](store::result<store::lsn> r) { done.push_back(r ? r.value().value : 0); };
  }
};

size_t recovered_records(sim_disk& d) {
  auto r = d.recover();
  return r ? r.value().records.size() : 0;
}

} // namespace

TEST(sim_disk, a_sync_completes_when_released) {
  sim_disk d{std::chrono::milliseconds(1), false};
  syncs s;
  ASSERT_TRUE(d.append(record(1)));
  d.sync(s.next());
  EXPECT_TRUE(s.done.empty());
  d.release(0);
  EXPECT_EQ(s.done, std::vector<uint64_t>{1});
}

TEST(sim_disk, a_stall_holds_a_sync_under_way_and_one_asked_during_it_until_its_end) {
  sim_disk d{std::chrono::milliseconds(1), false};
  syncs s;
  ASSERT_TRUE(d.append(record(1)));
  d.sync(s.next()); // under way when the stall begins
  d.stall();
  EXPECT_TRUE(d.stalled());
  d.release(0); // its time is up, but the disk is stalled
  EXPECT_TRUE(s.done.empty());
  ASSERT_TRUE(d.append(record(2)));
  d.sync(s.next()); // asked during the stall: no release will come for it
  EXPECT_TRUE(s.done.empty());
  d.end_stall();
  EXPECT_FALSE(d.stalled());
  EXPECT_EQ(s.done, (std::vector<uint64_t>{1, 2})); // both, in order
  d.end_stall();                                    // ending twice changes nothing
  EXPECT_EQ(s.done.size(), 2u);
}

TEST(sim_disk, a_crash_during_a_stall_drops_the_unsynced_and_its_syncs_never_complete) {
  sim_disk d{std::chrono::milliseconds(1), false};
  syncs s;
  ASSERT_TRUE(d.append(record(1)));
  d.sync(s.next());
  d.release(0);
  ASSERT_EQ(s.done.size(), 1u);
  d.stall();
  ASSERT_TRUE(d.append(record(2)));
  ASSERT_TRUE(d.append(record(3)));
  d.sync(s.next());
  EXPECT_EQ(d.crash(), 2u); // records 2 and 3 were not durable
  EXPECT_TRUE(d.stalled()); // the disk is still stalled after the crash
  d.end_stall();
  d.release(0); // a release of the dead generation does nothing either
  EXPECT_EQ(s.done.size(), 1u);
  EXPECT_EQ(recovered_records(d), 1u);
}

TEST(sim_disk, an_empty_stall_completes_nothing) {
  sim_disk d{std::chrono::milliseconds(1), false};
  syncs s;
  d.stall();
  d.end_stall();
  EXPECT_TRUE(s.done.empty());
  ASSERT_TRUE(d.append(record(1)));
  d.sync(s.next());
  d.release(0);
  EXPECT_EQ(s.done, std::vector<uint64_t>{1});
}
